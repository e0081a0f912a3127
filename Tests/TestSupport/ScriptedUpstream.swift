import Foundation
import Glibc

/// A scripted HTTP upstream on 127.0.0.1 for the upstream client's tests: a listening socket
/// served by one background thread, one script per accepted connection, in order. It reads
/// what the client sends and writes canned bytes (malformed ones included); every blocking
/// step is bounded (accept 10 s, reads 3 s), so a client that misbehaves fails a test rather
/// than hanging it.
public final class ScriptedUpstream: @unchecked Sendable {
    public enum Step: Sendable {
        /// Reads one whole request (head, then a Content-Length or chunked body) and records it.
        case readRequest
        /// Reads one request head only (the body, if any, is left in the socket).
        case readHead
        /// Reads exactly this many bytes (a body after `readHead`) and records them.
        case readBytes(Int)
        case send(String)
        case sendBytes([UInt8])
        case sleep(Double)
        /// Reads until the client closes (or 3 s pass) and records whether it did.
        case expectClose
        /// Closes this connection and signals `closed` (the test can then act on a stale one).
        case close
        /// Leaves this connection open and unread, and goes on to the next script (the
        /// client may keep it idle while later ones are served); closed with the upstream.
        case hold
    }

    public let port: UInt16
    private let listener: Int32
    private let lock = NSLock()
    private var _requests: [[UInt8]] = []
    private var _accepted = 0
    private var _clientClosed: [Bool] = []
    private var held: [Int32] = []
    /// Signalled after each `.close` step and when the script ends.
    public let closed = DispatchSemaphore(value: 0)
    public let finished = DispatchSemaphore(value: 0)

    /// `receiveBuffer`: SO_RCVBUF for accepted connections (a small one makes a client's
    /// large body fill the socket buffers quickly).
    public init(_ scripts: [[Step]], receiveBuffer: Int32? = nil) throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw POSIXError(.EIO) }
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        if var size = receiveBuffer {
            setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0, listen(fd, 16) == 0 else {
            close(fd)
            throw POSIXError(.EADDRINUSE)
        }
        listener = fd
        port = Self.localPort(fd)
        let thread = Thread { [self] in serve(scripts) }
        thread.start()
    }

    deinit {
        close(listener)
        for fd in lock.withLock({ held }) { close(fd) }
    }

    /// Raw requests received (head and body bytes as sent), across connections.
    public var requests: [[UInt8]] { lock.withLock { _requests } }
    public var requestTexts: [String] { requests.map { String(decoding: $0, as: UTF8.self) } }
    public var accepted: Int { lock.withLock { _accepted } }
    /// Per `.expectClose` step: whether the client closed.
    public var clientClosed: [Bool] { lock.withLock { _clientClosed } }

    public static func localPort(_ fd: Int32) -> UInt16 {
        var address = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        return UInt16(bigEndian: address.sin_port)
    }

    private func serve(_ scripts: [[Step]]) {
        defer { finished.signal() }
        for script in scripts {
            var poller = pollfd(fd: listener, events: Int16(POLLIN), revents: 0)
            guard poll(&poller, 1, 10_000) == 1 else { return }
            let conn = accept(listener, nil, nil)
            guard conn >= 0 else { return }
            lock.withLock { _accepted += 1 }
            var timeout = timeval(tv_sec: 3, tv_usec: 0)
            setsockopt(conn, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            var pending: [UInt8] = []
            var open = true
            for step in script where open {
                switch step {
                case .readRequest, .readHead:
                    guard
                        let request = readRequest(
                            conn, &pending,
                            withBody: { if case .readRequest = step { return true } else { return false } }())
                    else {
                        open = false
                        break
                    }
                    lock.withLock { _requests.append(request) }
                case .readBytes(let count):
                    while pending.count < count {
                        guard read(conn, &pending) else { break }
                    }
                    let bytes = Array(pending.prefix(count))
                    pending.removeFirst(bytes.count)
                    lock.withLock { _requests.append(bytes) }
                    if bytes.count < count { open = false }
                case .send(let text): writeAll(conn, Array(text.utf8))
                case .sendBytes(let bytes): writeAll(conn, bytes)
                case .sleep(let seconds): Thread.sleep(forTimeInterval: seconds)
                case .expectClose:
                    var sawClose = false
                    var buffer = [UInt8](repeating: 0, count: 65536)
                    while true {
                        let n = recv(conn, &buffer, buffer.count, 0)
                        if n == 0 || (n < 0 && errno == ECONNRESET) {
                            sawClose = true
                            break
                        }
                        if n < 0 { break }
                    }
                    lock.withLock { _clientClosed.append(sawClose) }
                case .close:
                    close(conn)
                    open = false
                    closed.signal()
                case .hold:
                    lock.withLock { held.append(conn) }
                    open = false
                }
            }
            if open { close(conn) }
        }
    }

    /// One request: the head up to CRLFCRLF, then (with `withBody`) its Content-Length or
    /// chunked body (trailers included). Bytes past it stay in `pending`.
    private func readRequest(_ fd: Int32, _ pending: inout [UInt8], withBody: Bool) -> [UInt8]? {
        let terminator: [UInt8] = [13, 10, 13, 10]
        var headEnd: Int?
        while headEnd == nil {
            if let r = find(terminator, in: pending) {
                headEnd = r + 4
                break
            }
            guard read(fd, &pending) else { return nil }
        }
        let head = String(decoding: pending[..<headEnd!], as: UTF8.self).lowercased()
        var end = headEnd!
        if withBody {
            if let line = head.split(separator: "\r\n").first(where: { $0.hasPrefix("content-length:") }),
                let n = Int(line.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces))
            {
                while pending.count < headEnd! + n { guard read(fd, &pending) else { return nil } }
                end = headEnd! + n
            } else if head.contains("transfer-encoding: chunked") {
                // Walked chunk by chunk from a cursor kept across reads (a large body costs
                // no rescans): each chunk, the last chunk, its trailer lines, the empty line.
                var cursor = headEnd!
                var lastChunk = false
                while true {
                    guard let lineEnd = Self.crlf(in: pending, from: cursor) else {
                        guard read(fd, &pending) else { return nil }
                        continue
                    }
                    if lastChunk {
                        let empty = lineEnd == cursor
                        cursor = lineEnd + 2
                        if empty { break }
                        continue
                    }
                    let sizeText = String(decoding: pending[cursor..<lineEnd], as: UTF8.self)
                    guard let size = Int(sizeText.split(separator: ";").first ?? "", radix: 16) else { return nil }
                    if size == 0 {
                        lastChunk = true
                        cursor = lineEnd + 2
                        continue
                    }
                    while pending.count < lineEnd + 2 + size + 2 { guard read(fd, &pending) else { return nil } }
                    cursor = lineEnd + 2 + size + 2
                }
                end = cursor
            }
        }
        let request = Array(pending[..<end])
        pending.removeFirst(end)
        return request
    }

    private func read(_ fd: Int32, _ into: inout [UInt8]) -> Bool {
        var buffer = [UInt8](repeating: 0, count: 65536)
        let n = recv(fd, &buffer, buffer.count, 0)
        guard n > 0 else { return false }
        into.append(contentsOf: buffer[..<n])
        return true
    }

    private func writeAll(_ fd: Int32, _ bytes: [UInt8]) {
        var offset = 0
        while offset < bytes.count {
            let n = bytes[offset...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard n > 0 else { return }
            offset += n
        }
    }

    private static func crlf(in bytes: [UInt8], from start: Int) -> Int? {
        var i = start
        while i + 1 < bytes.count {
            if bytes[i] == 13 && bytes[i + 1] == 10 { return i }
            i += 1
        }
        return nil
    }

    private func find(_ needle: [UInt8], in haystack: [UInt8]) -> Int? {
        guard haystack.count >= needle.count else { return nil }
        for i in 0...(haystack.count - needle.count) where haystack[i] == needle[0] {
            if Array(haystack[i..<(i + needle.count)]) == needle { return i }
        }
        return nil
    }
}

/// Decodes a chunked body (no trailers): for checking what the client streamed.
public func decodeChunked(_ bytes: ArraySlice<UInt8>) -> [UInt8]? {
    var out: [UInt8] = []
    var i = bytes.startIndex
    while true {
        guard let cr = bytes[i...].firstIndex(of: 13), cr + 1 < bytes.endIndex, bytes[cr + 1] == 10,
            let size = Int(String(decoding: bytes[i..<cr], as: UTF8.self), radix: 16)
        else { return nil }
        i = cr + 2
        if size == 0 { return Array(bytes[i...]) == [13, 10] ? out : nil }
        guard i + size + 2 <= bytes.endIndex, bytes[i + size] == 13, bytes[i + size + 1] == 10 else { return nil }
        out.append(contentsOf: bytes[i..<(i + size)])
        i += size + 2
    }
}
