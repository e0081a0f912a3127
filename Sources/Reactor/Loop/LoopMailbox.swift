import Foundation

/// Work that other threads hand to one loop. The loop's `event_base` runs without
/// libevent's lock (`EventLoop`), so no thread but the loop's may call into it: another
/// thread queues its closure here and wakes the loop through a pipe, whose read end the
/// loop watches; the loop then schedules the work itself. Owns the pipe and its event.
final class LoopMailbox: @unchecked Sendable {
    private struct Letter {
        let after: Double
        let work: () -> Void
    }

    private let lock = NSLock()
    /// Under `lock`.
    private var letters: [Letter] = []
    /// Under `lock`: a byte is in the pipe that the loop has not taken yet, so a new letter
    /// needs no other.
    private var wakeSent = false
    private let readEnd: Int32
    private let writeEnd: Int32
    private var event: LoopEvent?
    /// What the loop does with a letter (set once, before the loop runs).
    private let deliver: (_ after: Double, _ work: @escaping () -> Void) -> Void

    init(base: OpaquePointer, deliver: @escaping (_ after: Double, _ work: @escaping () -> Void) -> Void) {
        var ends: [Int32] = [-1, -1]
        precondition(pipe(&ends) == 0, "pipe failed: errno \(errno)")
        for fd in ends {
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        }
        readEnd = ends[0]
        writeEnd = ends[1]
        self.deliver = deliver
        event = LoopEvent(base: base, .socket(readEnd, .readable), persist: true) { [unowned self] _ in collect() }
        event?.add()
    }

    /// Frees the event; the loop calls it before it frees its base. Idempotent.
    func close() {
        event?.cancel()
        event = nil
    }

    deinit {
        close()
        Glibc.close(readEnd)
        Glibc.close(writeEnd)
    }

    /// Any thread: `work` runs on the loop's thread `after` seconds from when the loop
    /// reads it (soon, unless the loop is stopped).
    func post(after: Double, _ work: @escaping () -> Void) {
        lock.lock()
        letters.append(Letter(after: after, work: work))
        let wake = !wakeSent
        wakeSent = true
        lock.unlock()
        guard wake else { return }
        var byte: UInt8 = 1
        // A full pipe already holds a wake-up, which is all a byte says.
        _ = write(writeEnd, &byte, 1)
    }

    /// Loop thread: the pipe is readable.
    private func collect() {
        var sink = [UInt8](repeating: 0, count: 64)
        while sink.withUnsafeMutableBytes({ read(readEnd, $0.baseAddress, $0.count) }) > 0 {}
        lock.lock()
        let taken = letters
        letters = []
        wakeSent = false
        lock.unlock()
        for letter in taken { deliver(letter.after, letter.work) }
    }
}
