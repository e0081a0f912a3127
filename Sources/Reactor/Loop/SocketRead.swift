internal import CEvent
import Glibc

/// One `readv` from a socket straight into an evbuffer's reserved space. libevent's own
/// `evbuffer_read` first asks the kernel how much is readable (`ioctl(FIONREAD)`): one more
/// system call per read, on every request of every connection (measured: 7.0 system calls
/// per proxied request, of which 1.0 was that ioctl).
enum SocketRead {
    /// Appends at most `max` bytes to `buffer`: the count read, 0 at end of stream, or -1
    /// with `errno` set (EAGAIN when nothing is there).
    static func readv(_ fd: Int32, into buffer: OpaquePointer, max: Int) -> Int {
        withUnsafeTemporaryAllocation(of: iovec.self, capacity: 2) { vectors -> Int in
            let reserved = evbuffer_reserve_space(buffer, max, vectors.baseAddress, 2)
            guard reserved > 0 else {
                errno = ENOMEM
                return -1
            }
            // Never past `max`, whatever extra room the reservation left.
            var room = max
            for i in 0..<Int(reserved) {
                vectors[i].iov_len = min(vectors[i].iov_len, room)
                room -= vectors[i].iov_len
            }
            let got = Glibc.readv(fd, vectors.baseAddress, reserved)
            if got <= 0 {
                let saved = errno
                evbuffer_commit_space(buffer, vectors.baseAddress, 0)
                errno = saved
                return got
            }
            var left = got
            var used: Int32 = 0
            for i in 0..<Int(reserved) where left > 0 {
                let take = min(vectors[i].iov_len, left)
                vectors[i].iov_len = take
                left -= take
                used += 1
            }
            guard evbuffer_commit_space(buffer, vectors.baseAddress, used) == 0 else {
                errno = ENOMEM
                return -1
            }
            return got
        }
    }
}
