import Glibc

/// glibc's per-thread cache of free memory (tcache) keeps at most 7 chunks of each size by
/// default. A worker has dozens of requests in flight at once, each with the same handful of
/// objects (the exchange, its responder, the upstream call…), so the cache overflows and
/// most allocations and frees take malloc's slower bins: about 1,400 instructions a proxied
/// request, 4 % of all (callgrind, bench/README.md). glibc reads the cache's depth only at
/// process start, from `GLIBC_TUNABLES`; so `serve` adds it there and runs itself again once
/// (same process id, same arguments; ignored signals stay ignored). An environment that
/// names `glibc.malloc.tcache_count` already is left as it is, and so is a failed exec.
/// The kernel names a process after the file it execs, here `exe`; the name `ps`, `top`,
/// `pgrep` and `pkill -x` see is set back to the program's own.
enum AllocatorTuning {
    static let tunable = "glibc.malloc.tcache_count"
    /// Free chunks kept per size and thread: enough for the objects of a worker's requests in
    /// flight, a few hundred KB at most.
    static let depth = 64

    /// What `GLIBC_TUNABLES` should hold, or nil when it names the tunable already.
    static func tunables(_ current: String?) -> String? {
        guard let current, !current.isEmpty else { return "\(tunable)=\(depth)" }
        if current.split(separator: ":").contains(where: { $0.hasPrefix("\(tunable)=") }) { return nil }
        return "\(current):\(tunable)=\(depth)"
    }

    /// Returns only when nothing was to be done or the exec failed.
    static func applyByRunningAgain() {
        keepProgramName()
        guard let value = tunables(getenv("GLIBC_TUNABLES").map { String(cString: $0) }),
            setenv("GLIBC_TUNABLES", value, 1) == 0
        else { return }
        let arguments = CommandLine.arguments.map { strdup($0) }
        var argv = arguments + [nil]
        execv("/proc/self/exe", &argv)
        // No /proc (or no exec): run on with glibc's default cache.
        for argument in arguments { free(argument) }
    }

    /// After the exec the process is called `exe` (the last part of `/proc/self/exe`). Its
    /// name — the main thread's, `/proc/self/comm` — is set back to the last part of
    /// `argv[0]`, as the first exec gave it (the kernel keeps 15 bytes). Threads started
    /// later inherit it.
    static func keepProgramName() {
        guard let program = CommandLine.arguments.first?.split(separator: "/").last, program != "exe" else { return }
        let fd = open("/proc/self/comm", O_RDWR | O_CLOEXEC)
        guard fd >= 0 else { return }
        defer { close(fd) }
        var current = [UInt8](repeating: 0, count: 16)
        let n = read(fd, &current, current.count)
        guard n > 0, current[0..<n] == Array("exe\n".utf8)[...] else { return }
        let name = Array(program.utf8.prefix(15))
        _ = write(fd, name, name.count)
    }
}
