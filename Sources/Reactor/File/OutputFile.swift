import Glibc

/// A descriptor written with blocking `write(2)` from a thread of its own (a log sink's):
/// a standard stream, which belongs to the process and is never closed, or a file opened
/// for appending, which this owns and closes (`close()`, or `deinit`). The one place the
/// gateway's logs touch a descriptor and a raw buffer.
public final class OutputFile {
    /// Why a file could not be opened: the system's message for `errno`.
    public struct OpenError: Error, Sendable {
        public let reason: String
    }

    /// How a `write` ended.
    public enum WriteOutcome: Equatable, Sendable {
        case written
        /// The descriptor failed after `written` bytes; `reason` is the system's message.
        case failed(written: Int, reason: String)
    }

    private var fd: Int32
    private let owned: Bool

    private init(fd: Int32, owned: Bool) {
        self.fd = fd
        self.owned = owned
    }

    /// The process's standard output (descriptor 1), not closed by this.
    public static func standardOutput() -> OutputFile { OutputFile(fd: 1, owned: false) }

    /// The process's standard error (descriptor 2), not closed by this.
    public static func standardError() -> OutputFile { OutputFile(fd: 2, owned: false) }

    /// `path` opened for writing at its end, created (0644) if missing.
    public convenience init(appendingTo path: String) throws(OpenError) {
        let fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw OpenError(reason: String(cString: strerror(errno))) }
        self.init(fd: fd, owned: true)
    }

    deinit { close() }

    /// Closes a file this opened; a standard stream stays open. Idempotent.
    public func close() {
        guard owned, fd >= 0 else { return }
        Glibc.close(fd)
        fd = -1
    }

    /// Writes all of `bytes`, retrying after EINTR and waiting (up to a second at a time)
    /// on a descriptor someone else made non-blocking; stops at the first other failure.
    public func write(_ bytes: Span<UInt8>) -> WriteOutcome {
        bytes.withUnsafeBytes { p in
            var at = 0
            while at < p.count {
                let n = fd < 0 ? -1 : Glibc.write(fd, p.baseAddress! + at, p.count - at)
                if n > 0 {
                    at += n
                    continue
                }
                let code = fd < 0 ? EBADF : n < 0 ? errno : EIO
                if code == EINTR { continue }
                if code == EAGAIN || code == EWOULDBLOCK {
                    // A descriptor someone else made non-blocking: wait here, on this thread.
                    var pfd = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
                    _ = poll(&pfd, 1, 1000)
                    continue
                }
                return .failed(written: at, reason: String(cString: strerror(code)))
            }
            return .written
        }
    }
}
