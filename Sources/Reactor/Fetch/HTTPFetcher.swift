internal import CCurl
internal import CShim

/// Asynchronous HTTP(S) client for one loop: libcurl's multi interface driven by the loop's
/// sockets and timers (curl's socket and timer callbacks become libevent events), so a
/// request waiting on an IdP never blocks the loop. Loop-thread only. Owns its multi handle.
public final class HTTPFetcher {
    private let loop: EventLoop
    private let multi: UnsafeMutableRawPointer
    private let settings: FetchSettings
    private var timer: LoopEvent?
    private var transfers: [UnsafeMutableRawPointer: Transfer] = [:]
    private var socketEvents: [Int32: LoopEvent] = [:]

    private static let globalInit: Void = { curl_global_init(Int(CURL_GLOBAL_DEFAULT)) }()

    public init(loop: EventLoop, settings: FetchSettings = FetchSettings()) {
        _ = HTTPFetcher.globalInit
        self.loop = loop
        self.settings = settings
        guard let multi = curl_multi_init() else { fatalError("curl_multi_init failed") }
        self.multi = multi
        // Unretained: the fetcher owns the multi handle and outlives its callbacks.
        let me = Unmanaged.passUnretained(self).toOpaque()
        tg_curl_multi_set_socket_function(multi, socketThunk, me)
        tg_curl_multi_set_timer_function(multi, timerThunk, me)
        timer = LoopEvent(base: loop.base, .timer, persist: false) { [unowned self] _ in
            action(fd: CURL_SOCKET_TIMEOUT, events: [])
        }
    }

    deinit {
        for (easy, _) in transfers {
            curl_multi_remove_handle(multi, easy)
        }
        // Freed and forgotten before the cleanup: closing the cached connections may call the
        // socket or timer function again, which must find nothing to free a second time.
        for (_, ev) in socketEvents { ev.cancel() }
        socketEvents.removeAll()
        timer?.cancel()
        timer = nil
        curl_multi_cleanup(multi)
    }

    /// Starts a fetch; `completion` runs on this loop with the response or an error.
    public func fetch(_ request: FetchRequest, completion: @escaping (Result<FetchResponse, FetchError>) -> Void) {
        loop.assertInLoop()
        var request = request
        var completion = completion
        if let observer = loop.callObserver, let token = observer.fetchStarting(&request) {
            let caller = completion
            let sent = request
            completion = { result in
                switch result {
                case .success(let r):
                    observer.fetchEnded(token, sent, status: r.status, error: nil) { caller(result) }
                case .failure(let e):
                    observer.fetchEnded(token, sent, status: nil, error: e) { caller(result) }
                }
            }
        }
        let transfer = Transfer(request: request, completion: completion)
        do {
            let easy = try transfer.configure(settings: settings)
            transfers[easy] = transfer
            if curl_multi_add_handle(multi, easy) != CURLM_OK {
                transfers[easy] = nil
                throw FetchError(description: "curl_multi_add_handle failed")
            }
        } catch let error as FetchError {
            loop.execute { completion(.failure(error)) }
        } catch {
            loop.execute { completion(.failure(FetchError(description: "\(error)"))) }
        }
    }

    // MARK: curl → libevent

    fileprivate func socketChanged(_ fd: Int32, what: Int32) {
        socketEvents.removeValue(forKey: fd)?.cancel()
        guard what != CURL_POLL_REMOVE else { return }
        var kinds: SocketEvents = []
        if what & CURL_POLL_IN != 0 { kinds.insert(.readable) }
        if what & CURL_POLL_OUT != 0 { kinds.insert(.writable) }
        // Out of memory: the socket goes unwatched, and the transfer ends at its own timeout.
        guard
            let ev = LoopEvent(
                base: loop.base, .socket(fd, kinds), persist: true,
                { [unowned self] events in
                    action(fd: fd, events: events)
                })
        else { return }
        ev.add()
        socketEvents[fd] = ev
    }

    fileprivate func timerChanged(_ ms: Int) {
        guard let timer else { return }
        if ms < 0 {
            timer.delete()
            return
        }
        timer.add(timeout: Double(ms) / 1000)
    }

    private func action(fd: Int32, events: SocketEvents) {
        var mask: Int32 = 0
        if events.contains(.readable) { mask |= CURL_CSELECT_IN }
        if events.contains(.writable) { mask |= CURL_CSELECT_OUT }
        var running: Int32 = 0
        curl_multi_socket_action(multi, fd, mask, &running)
        collectFinished()
    }

    private func collectFinished() {
        var easy: UnsafeMutableRawPointer?
        var result = CURLE_OK
        while tg_curl_multi_next_done(multi, &easy, &result) != 0 {
            guard let easy else { continue }
            curl_multi_remove_handle(multi, easy)
            guard let transfer = transfers.removeValue(forKey: easy) else { continue }
            transfer.finish(result: result)
        }
    }
}

private func socketThunk(
    _ easy: UnsafeMutableRawPointer?, _ fd: curl_socket_t, _ what: Int32,
    _ userp: UnsafeMutableRawPointer?, _ socketp: UnsafeMutableRawPointer?
) -> Int32 {
    Unmanaged<HTTPFetcher>.fromOpaque(userp!).takeUnretainedValue().socketChanged(fd, what: what)
    return 0
}

private func timerThunk(_ multi: UnsafeMutableRawPointer?, _ ms: Int, _ userp: UnsafeMutableRawPointer?) -> Int32 {
    Unmanaged<HTTPFetcher>.fromOpaque(userp!).takeUnretainedValue().timerChanged(ms)
    return 0
}
