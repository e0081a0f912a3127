internal import CEvent
import Glibc

/// Writes the front of an evbuffer to a socket with one `sendmsg` of up to 32 of its
/// pieces (a head and a body together), draining what went out. A socket call rather than
/// `writev` (libevent's `evbuffer_write`): no file position lock, and `MSG_NOSIGNAL` makes
/// a peer that is gone an error code instead of SIGPIPE.
enum SocketWrite {
    /// iovecs per sendmsg (libevent's own writev uses up to 128).
    static let maxVectors = 32

    /// One sendmsg: the bytes sent, or -errno; `full`: the socket took fewer bytes than
    /// were offered (it is full: wait for writable).
    static func send(_ fd: Int32, from output: OpaquePointer) -> (sent: Int, full: Bool) {
        withUnsafeTemporaryAllocation(of: iovec.self, capacity: maxVectors) { vectors in
            let n = evbuffer_peek(output, -1, nil, vectors.baseAddress, Int32(maxVectors))
            var message = msghdr()
            message.msg_iov = vectors.baseAddress
            message.msg_iovlen = Int(min(n, Int32(maxVectors)))
            var offered = 0
            for i in 0..<message.msg_iovlen { offered += vectors[i].iov_len }
            let sent = sendmsg(fd, &message, Int32(MSG_NOSIGNAL))
            if sent < 0 { return (-Int(errno), false) }
            evbuffer_drain(output, sent)
            return (sent, sent < offered)
        }
    }
}
