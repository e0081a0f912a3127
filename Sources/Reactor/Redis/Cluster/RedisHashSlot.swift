/// Redis Cluster key hashing (cluster specification, "Key distribution model"): a key's slot
/// is `CRC16(key) mod 16384`, where only the hash tag is hashed when the key has one.
enum RedisHashSlot {
    /// Slots of a cluster, 0 to 16383.
    static let count = 16384

    /// CRC16 as the cluster specification defines it (the XMODEM variant): polynomial 0x1021,
    /// initial value 0, input and output not reflected, no final XOR. The specification's
    /// check value: CRC16("123456789") == 0x31C3.
    static func crc16(_ bytes: some Sequence<UInt8>) -> UInt16 {
        var crc: UInt16 = 0
        for byte in bytes {
            crc = (crc << 8) ^ table[Int(UInt8(truncatingIfNeeded: crc >> 8) ^ byte)]
        }
        return crc
    }

    /// One step of the bitwise algorithm per byte value, precomputed.
    private static let table: [UInt16] = (0..<256).map { value in
        var crc = UInt16(value) << 8
        for _ in 0..<8 {
            crc = crc & 0x8000 != 0 ? (crc << 1) ^ 0x1021 : crc << 1
        }
        return crc
    }

    /// The slot of one key. "If the key contains a `{` character, and if there is a `}`
    /// character to its right, and if there are one or more characters between the first
    /// occurrence of `{` and the first occurrence of `}`, then instead of the key, only what
    /// is between the first occurrence of `{` and the following first occurrence of `}` is
    /// hashed."
    static func slot(of key: some Collection<UInt8>) -> Int {
        if let open = key.firstIndex(of: UInt8(ascii: "{")) {
            let afterOpen = key.index(after: open)
            if let close = key[afterOpen...].firstIndex(of: UInt8(ascii: "}")), close != afterOpen {
                return Int(crc16(key[afterOpen..<close]) & 0x3FFF)
            }
        }
        return Int(crc16(key) & 0x3FFF)
    }

    /// The one slot of the key arguments at `keys` (indexes into `arguments`), nil when there
    /// are none. Keys in different slots are refused before anything is sent, as the cluster
    /// would refuse them (`CROSSSLOT`): a command runs on one node.
    static func slot(of arguments: [[UInt8]], keys: [Int]) throws(RedisError) -> Int? {
        var slot: Int?
        for index in keys {
            guard index >= 1, index < arguments.count else {
                throw RedisError(
                    .protocolError, "key index \(index) outside the command's \(arguments.count) arguments")
            }
            let this = self.slot(of: arguments[index])
            if let slot, slot != this {
                let name = String(decoding: arguments[0], as: UTF8.self).uppercased()
                throw RedisError(
                    .protocolError, "CROSSSLOT: the keys of \(name) hash to different slots (\(slot), \(this))")
            }
            slot = this
        }
        return slot
    }
}
