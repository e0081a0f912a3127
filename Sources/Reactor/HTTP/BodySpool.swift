internal import CShim
import Glibc

/// Message bytes kept in an unnamed temporary file (`O_TMPFILE`: gone with the descriptor,
/// never visible by name) until their reader takes them, as nginx's proxy buffering does: the
/// part of a response that its client is not ready for, so that the upstream is read at its
/// own pace and its connection freed; or a request body read whole before the upstream hears
/// of it (`SpooledRequestBody`), so that a slow sender holds no upstream connection.
/// Bytes come out in the order they went in: first the file's, then a last chunk kept in
/// memory when a cap was reached (`overflow`), after which the producer must pause.
/// Loop-thread only; owns the descriptor, closed in `deinit`.
public final class BodySpool {
    public enum Stored {
        /// In the file.
        case stored
        /// Kept in memory past a cap (the response's or the process's): pause the producer
        /// until the spool is empty.
        case full
        /// The file could not be written (the disk is full): the response cannot go on whole.
        case failed
    }

    private let fd: Int32
    private let budget: SpoolBudget
    /// Whose share of the budget the bytes count in (`SpoolBudget.reserve(_:for:)`).
    private let source: String?
    private let maxBytes: Int
    /// Bytes written to the file, and read back from it.
    private var written = 0
    private var readBack = 0
    /// A chunk that came past a cap, after the file's bytes.
    private let overflow = ByteQueue()

    /// A spool in `directory`, or nil if no file can be made there. `source`: the client
    /// whose share of `budget` its bytes count in (nil: the budget's total alone).
    public init?(directory: String, budget: SpoolBudget, maxBytes: Int, source: String? = nil) {
        let fd = tg_open_unnamed_file(directory)
        guard fd >= 0 else { return nil }
        budget.countSpool()
        self.fd = fd
        self.budget = budget
        self.source = source
        self.maxBytes = maxBytes
    }

    deinit {
        close(fd)
        budget.release(written, for: source)
    }

    /// Bytes waiting to go out.
    public var pending: Int { written - readBack + overflow.count }

    /// Takes `chunk`'s bytes: into the file while both caps allow, else into memory.
    public func append(_ chunk: BodyChunk) -> Stored {
        restartIfReadBack()
        if overflow.count > 0 || written + chunk.count > maxBytes || !budget.reserve(chunk.count, for: source) {
            chunk.move(to: overflow)
            return .full
        }
        var left = chunk.count
        while left > 0 {
            let n = chunk.queue.write(to: fd, atMost: left)
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else {
                // What was not written is dropped: the caller moves no byte of a failed chunk.
                budget.release(left, for: source)
                chunk.queue.drain(left)
                return .failed
            }
            written += Int(n)
            left -= Int(n)
        }
        return .stored
    }

    /// Once every byte of the file was read back, the file starts over empty (truncated, its
    /// disk given back), so the caps bound what waits, not what ever passed.
    private func restartIfReadBack() {
        guard written > 0, readBack == written else { return }
        _ = ftruncate(fd, 0)
        _ = lseek(fd, 0, SEEK_SET)
        budget.release(written, for: source)
        written = 0
        readBack = 0
    }

    /// Shows the bytes waiting, in order, without taking them (a digest over a body read
    /// whole: RFC 9530 `Content-Digest`). The file is read in 64 KiB pieces at their offsets;
    /// false when it cannot be read.
    public func scan(_ visit: (UnsafeRawBufferPointer) -> Void) -> Bool {
        var piece = [UInt8](repeating: 0, count: 1 << 16)
        var offset = readBack
        while offset < written {
            let want = min(piece.count, written - offset)
            let r = piece.withUnsafeMutableBytes { pread(fd, $0.baseAddress, want, off_t(offset)) }
            if r < 0 && errno == EINTR { continue }
            guard r > 0 else { return false }
            piece.withUnsafeBytes { visit(UnsafeRawBufferPointer(rebasing: $0.prefix(r))) }
            offset += r
        }
        overflow.scan(visit)
        return true
    }

    /// Up to `max` bytes, in order, as a chunk; nil when nothing waits or the file cannot be
    /// read.
    public func next(max: Int) -> BodyChunk? {
        let out = ByteQueue()
        let fromFile = min(max, written - readBack)
        if fromFile > 0 {
            let read = out.appendInPlace(upTo: fromFile) { space in
                var n = 0
                while n < space.count {
                    let r = pread(fd, space.baseAddress! + n, space.count - n, off_t(readBack + n))
                    if r < 0 && errno == EINTR { continue }
                    guard r > 0 else { return -1 }
                    n += r
                }
                return n
            }
            guard let n = read, n == fromFile else { return nil }
            readBack += n
            restartIfReadBack()
        } else if overflow.count > 0 {
            return BodyChunk(queue: overflow, count: min(max, overflow.count), keepingAlive: true)
        }
        return out.count > 0 ? out.chunk : nil
    }
}
