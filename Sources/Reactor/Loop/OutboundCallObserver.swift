/// Told of every call a loop makes to a dependency (an HTTP fetch, a Redis command) as it
/// starts and as it ends, on the loop's thread: the gateway's tracing makes a CLIENT span of
/// each, and carries the request the call was made for into its completion. The Reactor
/// knows nothing of tracing; a loop without an observer pays one nil check per call.
public protocol OutboundCallObserver: AnyObject {
    /// A fetch is about to start; the observer may add header lines to `request` (trace
    /// context). What it returns is handed back to `fetchEnded`; nil: not observed.
    func fetchStarting(_ request: inout FetchRequest) -> AnyObject?
    /// The fetch ended (`status` of the answer, or the error); `completion` is the caller's
    /// own, which the observer runs before it returns.
    func fetchEnded(
        _ token: AnyObject, _ request: FetchRequest, status: Int?, error: FetchError?, completion: () -> Void)
    /// A Redis command (`name`, upper-case: never its arguments) is about to be sent.
    func redisStarting(_ name: String) -> AnyObject?
    /// The command ended; `completion` as for a fetch.
    func redisEnded(_ token: AnyObject, error: RedisError?, completion: () -> Void)
}
