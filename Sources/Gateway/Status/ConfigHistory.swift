/// The config's generation and what became of each reload, for the status page. Kept on the
/// main loop by `GatewayServer`; bounded, so a reload loop cannot grow it.
struct ConfigHistory: Sendable {
    /// How many reloads are remembered (the oldest is dropped past it).
    static let limit = 20

    enum Outcome: String, Sendable {
        /// The new file took effect.
        case applied
        /// The new file had problems; the old config kept serving.
        case refused
    }

    struct Reload: Sendable {
        /// Wall-clock seconds since the epoch.
        var time: Double
        var outcome: Outcome
        /// The generation serving after this reload.
        var generation: Int
        /// Where a refused file went wrong: key paths and lines only. A problem's message may
        /// quote the value it refuses, and the value may be a secret.
        var problems: [String] = []
        /// Some changes (listeners, workers, the store…) were kept back until a restart.
        var restartNeeded = false
    }

    /// 1 for the config read at start; each applied reload adds one.
    private(set) var generation = 1
    /// When the serving config was loaded (at start, or its reload).
    private(set) var loadedAt: Double
    /// Newest last.
    private(set) var reloads: [Reload] = []

    init(startedAt: Double) { loadedAt = startedAt }

    mutating func applied(at time: Double, restartNeeded: Bool) {
        generation += 1
        loadedAt = time
        append(Reload(time: time, outcome: .applied, generation: generation, restartNeeded: restartNeeded))
    }

    mutating func refused(at time: Double, problems: [ConfigProblem]) {
        let places = problems.map { p in
            let at = p.line.map { "line \($0)" }
            let place = [p.path.isEmpty ? nil : p.path, at].compactMap { $0 }.joined(separator: ", ")
            return place.isEmpty ? "the file" : place
        }
        append(Reload(time: time, outcome: .refused, generation: generation, problems: places))
    }

    private mutating func append(_ r: Reload) {
        reloads.append(r)
        if reloads.count > Self.limit { reloads.removeFirst(reloads.count - Self.limit) }
    }
}
