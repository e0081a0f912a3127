internal import CEvent
import Glibc

/// A queue's two ends meeting a file descriptor: one `recv` into its end, one `sendmsg` of
/// its front, one `write` of its front to a spool file.
extension ByteQueue {
    /// iovecs per sendmsg (libevent's own writev uses up to 128).
    static let maxSendVectors = 32

    /// One `recv` straight into the queue's reserved end: at most `max` bytes; the count
    /// read, 0 at end of stream, or -1 with `errno` set (EAGAIN when nothing is there).
    /// `filled`: the read took all the room it asked for, so more may wait in the socket (a
    /// shorter read emptied it).
    ///
    /// Not `evbuffer_read`: it first asks the kernel how much is readable
    /// (`ioctl(FIONREAD)`), one more system call per read on every request (measured: 7.0
    /// system calls per proxied request, of which 1.0 was that ioctl). `recv` rather than
    /// `readv`: the socket call skips the file layer's position lock and iovec import (perf
    /// put `readv`'s extra kernel work at about 0.3 us per proxied request).
    func receive(from fd: Int32, max: Int, filled: inout Bool) -> Int {
        var full = false
        let got = appendInPlace(upTo: max) { space in
            let got = recv(fd, space.baseAddress, space.count, 0)
            full = got == space.count
            return got
        }
        guard let got else {
            errno = ENOMEM
            return -1
        }
        filled = full
        return got
    }

    /// One `sendmsg` of up to `maxSendVectors` pieces from the front (a head and a body
    /// together), dropping what went out: the bytes sent, or -errno; `full`: the socket took
    /// fewer bytes than were offered (wait for writable). A socket call rather than `writev`
    /// (libevent's `evbuffer_write`): no file position lock, and `MSG_NOSIGNAL` makes a peer
    /// that is gone an error code instead of SIGPIPE.
    func send(to fd: Int32) -> (sent: Int, full: Bool) {
        withUnsafeTemporaryAllocation(of: iovec.self, capacity: Self.maxSendVectors) { vectors in
            let n = evbuffer_peek(raw, -1, nil, vectors.baseAddress, Int32(Self.maxSendVectors))
            var message = msghdr()
            message.msg_iov = vectors.baseAddress
            message.msg_iovlen = Int(min(n, Int32(Self.maxSendVectors)))
            var offered = 0
            for i in 0..<message.msg_iovlen { offered += vectors[i].iov_len }
            let sent = sendmsg(fd, &message, Int32(MSG_NOSIGNAL))
            if sent < 0 { return (-Int(errno), false) }
            evbuffer_drain(raw, sent)
            return (sent, sent < offered)
        }
    }

    /// Writes at most `count` bytes from the front to `fd` (a file: blocking writes),
    /// dropping what went out; the count written, or -1 with `errno` set.
    func write(to fd: Int32, atMost count: Int) -> Int {
        Int(evbuffer_write_atmost(raw, fd, count))
    }
}
