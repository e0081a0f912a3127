import Glibc

/// The thread an engine object runs on, checked at its entry points in debug builds (the
/// engine's objects are loop-thread only and take no locks). Recorded at the first entry
/// from the loop: a server may be built on another thread before its loop starts.
struct LoopThread {
    private var owner: pthread_t?

    /// Records the calling thread as the owner.
    mutating func bind() { owner = pthread_self() }

    /// Records the calling thread if none is yet (the first loop callback).
    mutating func bindIfUnbound() { if owner == nil { owner = pthread_self() } }

    /// Asserts (debug builds) that the caller is the owning thread.
    func check(_ function: StaticString = #function) {
        assert(
            owner.map { pthread_equal($0, pthread_self()) != 0 } ?? true,
            "\(function) called off its event loop's thread")
    }
}
