@testable import Reactor

extension EventLoop {
    /// Runs the loop until `finish` is called or `limit` seconds pass; true if finished. A
    /// `finish` from an earlier step (a late completion) does not end a later one, so a
    /// client that hangs fails its test instead of hanging it.
    @discardableResult
    func runStep(limit: Double, _ start: (_ finish: @escaping () -> Void) -> Void) -> Bool {
        final class Step {
            var active = true
            var finished = false
        }
        let step = Step()
        start { [self] in
            guard step.active else { return }
            step.finished = true
            stop()
        }
        if !step.finished {
            let limitTimer = LoopTimer(loop: self, seconds: limit) { [self] in stop() }
            run()
            limitTimer.cancel()
        }
        step.active = false
        return step.finished
    }
}
