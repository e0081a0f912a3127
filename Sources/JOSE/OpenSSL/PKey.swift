internal import COpenSSL
import Glibc
import Synchronization

/// Owns one `EVP_PKEY`. Immutable after creation, so OpenSSL 3 allows concurrent verify and
/// sign operations on it from several threads (each with its own EVP_MD_CTX); that is why
/// it is `@unchecked Sendable`.
final class PKey: @unchecked Sendable {
    let pointer: OpaquePointer

    init(taking pointer: OpaquePointer) { self.pointer = pointer }

    deinit { EVP_PKEY_free(pointer) }

    var bits: Int { Int(EVP_PKEY_get_bits(pointer)) }

    /// Builds a key from OSSL_PARAMs (`EVP_PKEY_fromdata`), e.g. RSA n/e or EC group/pub.
    static func fromData(type: String, selection: Int32, build: (ParamBuilder) throws -> Void) throws -> PKey {
        let builder = try ParamBuilder()
        try build(builder)
        // The builder (and the BIGNUMs and strings it points to) must live until the params
        // are built; ARC could otherwise free it right after reading `bld`.
        let built = withExtendedLifetime(builder) { OSSL_PARAM_BLD_to_param(builder.bld) }
        guard let params = built else { throw OpenSSLError.make(.invalidKey, "key parameters") }
        defer { OSSL_PARAM_free(params) }
        guard let ctx = EVP_PKEY_CTX_new_from_name(nil, type, nil) else {
            throw OpenSSLError.make("EVP_PKEY_CTX_new_from_name")
        }
        defer { EVP_PKEY_CTX_free(ctx) }
        var pkey: OpaquePointer?
        guard EVP_PKEY_fromdata_init(ctx) == 1, EVP_PKEY_fromdata(ctx, &pkey, selection, params) == 1, let pkey else {
            throw OpenSSLError.make(.invalidKey, "the key parameters do not form a valid \(type) key")
        }
        return PKey(taking: pkey)
    }

    /// Runs OpenSSL's public-key check. `quick` (EVP_PKEY_public_check_quick) skips the
    /// costly part of the EC check, order × Q = ∞ (a full scalar multiplication, as dear as a
    /// signature check): for the NIST curves, whose cofactor is 1, a point in range and on the
    /// curve is already in the prime-order group (SP 800-56A rev. 3 §5.6.2.3.4).
    func checkPublic(quick: Bool = false) throws {
        guard let ctx = EVP_PKEY_CTX_new_from_pkey(nil, pointer, nil) else {
            throw OpenSSLError.make("EVP_PKEY_CTX_new")
        }
        defer { EVP_PKEY_CTX_free(ctx) }
        let ok = quick ? EVP_PKEY_public_check_quick(ctx) : EVP_PKEY_public_check(ctx)
        guard ok == 1 else { throw OpenSSLError.make(.invalidKey, "the public key fails validation") }
    }

    /// A private key's parts must belong to its public key (EVP_PKEY_pairwise_check), or a
    /// signer would produce signatures nobody can verify — or worse, trust a forged pair.
    func checkPair() throws {
        guard let ctx = EVP_PKEY_CTX_new_from_pkey(nil, pointer, nil) else {
            throw OpenSSLError.make("EVP_PKEY_CTX_new")
        }
        defer { EVP_PKEY_CTX_free(ctx) }
        guard EVP_PKEY_pairwise_check(ctx) == 1 else {
            throw OpenSSLError.make(.invalidKey, "the private key does not match its public key")
        }
    }

    /// Size of a signature in bytes (the RSA modulus length).
    var signatureSize: Int { Int(EVP_PKEY_get_size(pointer)) }

    /// A BIGNUM parameter as big-endian bytes, minimal or left-padded to `size`.
    func bnParam(_ name: String, size: Int? = nil) -> [UInt8]? {
        var bn: OpaquePointer?
        guard EVP_PKEY_get_bn_param(pointer, name, &bn) == 1, let bn else { return nil }
        defer { BN_clear_free(bn) }
        let n = size ?? Int((BN_num_bits(bn) + 7) / 8)
        var out = [UInt8](repeating: 0, count: n)
        guard BN_bn2binpad(bn, &out, Int32(n)) == Int32(n) else { return nil }
        return out
    }

    /// An octet-string parameter (an EC point, an OKP key) as its bytes.
    func octetParam(_ name: String) -> [UInt8]? {
        var len = 0
        guard EVP_PKEY_get_octet_string_param(pointer, name, nil, 0, &len) == 1 else { return nil }
        var out = [UInt8](repeating: 0, count: len)
        guard EVP_PKEY_get_octet_string_param(pointer, name, &out, len, &len) == 1 else { return nil }
        return Array(out.prefix(len))
    }
}

/// One named curve's domain parameters as a key without a point, built once, from which EC
/// public keys are made by copying it (`EVP_PKEY_dup`) and setting the point
/// (`EVP_PKEY_set1_encoded_public_key`). `EVP_PKEY_fromdata` with the curve's name builds the
/// whole `EC_GROUP` anew for every key (the field and order Montgomery contexts, the generator):
/// about 205k instructions per P-256 key against 43k for the copy. The point is decoded by
/// `EC_POINT_oct2point`, which refuses a coordinate out of range or a point off the curve, as
/// `EVP_PKEY_fromdata` does; callers still run `checkPublic` after.
final class ECPublicKeyFactory: Sendable {
    /// Owned by the `PKey`. `EVP_PKEY_dup` takes a non-const `EVP_PKEY`, so the template is
    /// copied by one thread at a time (openssl-threads(7): only APIs that do not modify the
    /// object are safe on a shared one); a DPoP proof key is imported once per client key per
    /// worker, so the lock is rarely contended.
    private let template: Mutex<PKey>

    init(openSSLName: String) throws {
        let params = try PKey.fromData(type: "EC", selection: KeySelection.domainParameters) { b in
            try b.utf8("group", openSSLName)
        }
        template = Mutex(params)
    }

    /// An EC public key from its uncompressed point (0x04 ‖ x ‖ y).
    func publicKey(point: [UInt8]) throws -> PKey {
        let copy: OpaquePointer? = template.withLock { EVP_PKEY_dup($0.pointer) }
        guard let copy else { throw OpenSSLError.make("EVP_PKEY_dup") }
        let key = PKey(taking: copy)
        guard EVP_PKEY_set1_encoded_public_key(key.pointer, point, point.count) == 1 else {
            throw OpenSSLError.make(.invalidKey, "the key parameters do not form a valid EC key")
        }
        return key
    }
}

/// Owns an OSSL_PARAM_BLD and the BIGNUMs pushed into it: the builder keeps pointers to
/// them until OSSL_PARAM_BLD_to_param, so they are freed with the builder, not before.
final class ParamBuilder {
    let bld: OpaquePointer
    private var bignums: [OpaquePointer] = []
    private var strings: [UnsafeMutablePointer<CChar>] = []
    private var octets: [UnsafeMutableRawPointer] = []

    init() throws {
        guard let bld = OSSL_PARAM_BLD_new() else { throw OpenSSLError.make("OSSL_PARAM_BLD_new") }
        self.bld = bld
    }

    deinit {
        OSSL_PARAM_BLD_free(bld)
        for bn in bignums { BN_clear_free(bn) }
        for s in strings { free(s) }
        for o in octets { o.deallocate() }
    }

    /// The builder keeps the parameter *name* pointer too, so names get a C copy that lives
    /// as long as the builder (a Swift string's C pointer is valid only during one call).
    private func cString(_ s: String) throws -> UnsafeMutablePointer<CChar> {
        guard let copy = strdup(s) else { throw OpenSSLError.make("strdup") }
        strings.append(copy)
        return copy
    }

    /// A big-endian unsigned integer.
    func bn(_ name: String, _ bytes: [UInt8]) throws {
        guard let bn = BN_bin2bn(bytes, Int32(bytes.count), nil) else { throw OpenSSLError.make("BN_bin2bn") }
        bignums.append(bn)
        guard OSSL_PARAM_BLD_push_BN(bld, try cString(name), bn) == 1 else { throw OpenSSLError.make("push \(name)") }
    }

    func utf8(_ name: String, _ value: String) throws {
        let copy = try cString(value)
        guard OSSL_PARAM_BLD_push_utf8_string(bld, try cString(name), copy, 0) == 1 else {
            throw OpenSSLError.make("push \(name)")
        }
    }

    func octets(_ name: String, _ bytes: [UInt8]) throws {
        let buf = UnsafeMutableRawPointer.allocate(byteCount: max(bytes.count, 1), alignment: 1)
        buf.copyMemory(from: bytes, byteCount: bytes.count)
        octets.append(buf)
        guard OSSL_PARAM_BLD_push_octet_string(bld, try cString(name), buf, bytes.count) == 1 else {
            throw OpenSSLError.make("push \(name)")
        }
    }
}

/// EVP_PKEY_PUBLIC_KEY / EVP_PKEY_KEYPAIR are composite macros Swift cannot import.
enum KeySelection {
    static let domainParameters = Int32(OSSL_KEYMGMT_SELECT_DOMAIN_PARAMETERS | OSSL_KEYMGMT_SELECT_OTHER_PARAMETERS)
    static let publicKey = Int32(
        OSSL_KEYMGMT_SELECT_DOMAIN_PARAMETERS | OSSL_KEYMGMT_SELECT_OTHER_PARAMETERS | OSSL_KEYMGMT_SELECT_PUBLIC_KEY)
    static let keyPair = publicKey | Int32(OSSL_KEYMGMT_SELECT_PRIVATE_KEY)
}
