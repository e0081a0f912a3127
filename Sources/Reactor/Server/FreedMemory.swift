internal import CShim

/// The allocator's free memory handed back to the system. glibc keeps what a program frees
/// for its next allocations, in every thread's arena; after a config reload that is the whole
/// old config and the new one's parse (at 10,000 routes about 20 MB, which the process would
/// otherwise hold until it exits, and which grows a little with each reload as the workers'
/// arenas fragment).
public enum FreedMemory {
    /// `malloc_trim(0)`: every arena's free pages, not only the top of the main heap.
    /// Milliseconds of work: for rare events (a reload), never on a request's path.
    public static func release() {
        _ = malloc_trim(0)
    }
}
