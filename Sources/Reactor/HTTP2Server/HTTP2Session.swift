internal import CNghttp2

/// The nghttp2 server session of one connection: created with the limits the engine
/// relies on and its callbacks wired to the handler. The callbacks only record what
/// happened (a stream began, a field, a body chunk, a frame, a close) in the handler's
/// streams and event queue; the gateway hears of it after `nghttp2_session_mem_recv` or
/// `mem_send` returns (`HTTP2ConnectionHandler.deliverEvents`), never from inside nghttp2.
enum HTTP2Session {
    /// Streams a client may have open at once (SETTINGS_MAX_CONCURRENT_STREAMS, RFC 9113
    /// §6.5.2); nghttp2 refuses more with RST_STREAM(REFUSED_STREAM).
    static let maxConcurrentStreams: UInt32 = 128
    /// Each stream's receive window: the most request body bytes a stream holds that the
    /// gateway has not taken yet (a paused upload, an unclaimed body).
    static let streamWindow: UInt32 = 256 << 10
    /// The connection's receive window: the most such bytes across all its streams.
    static let connectionWindow: Int32 = 4 << 20

    /// A session for `handler` (user data: the handler, unretained: it owns the session),
    /// with its SETTINGS and connection window queued; nil when nghttp2 is out of memory.
    static func make(for handler: HTTP2ConnectionHandler, maxHeaderListSize: Int) -> OpaquePointer? {
        var callbacks: OpaquePointer?
        guard nghttp2_session_callbacks_new(&callbacks) == 0, let callbacks else { return nil }
        defer { nghttp2_session_callbacks_del(callbacks) }
        nghttp2_session_callbacks_set_on_begin_headers_callback(callbacks) { _, frame, user in
            owner(user).beginHeaders(frame!.pointee)
        }
        nghttp2_session_callbacks_set_on_header_callback(callbacks) {
            _, frame, name, nameCount, value, valueCount, _, user in
            owner(user).header(
                frame!.pointee, name: UnsafeBufferPointer(start: name, count: nameCount),
                value: UnsafeBufferPointer(start: value, count: valueCount))
        }
        nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks) { _, frame, user in
            owner(user).frameReceived(frame!.pointee)
        }
        nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks) { _, _, id, data, count, user in
            owner(user).dataReceived(id, UnsafeRawBufferPointer(start: data, count: count))
        }
        nghttp2_session_callbacks_set_on_frame_send_callback(callbacks) { _, frame, user in
            owner(user).frameSent(frame!.pointee)
        }
        nghttp2_session_callbacks_set_on_invalid_frame_recv_callback(callbacks) { _, frame, _, user in
            owner(user).invalidFrame(frame!.pointee)
        }
        nghttp2_session_callbacks_set_on_stream_close_callback(callbacks) { _, id, code, user in
            owner(user).streamClosed(id, code)
        }

        var option: OpaquePointer?
        guard nghttp2_option_new(&option) == 0, let option else { return nil }
        defer { nghttp2_option_del(option) }
        // Body bytes are credited to the client's windows only once the gateway took them:
        // flow control is the backpressure of an upload.
        HTTP2SessionSetup.applyCommonLimits(option)
        // Rapid reset (CVE-2023-44487): at most a burst of 1000 client resets, then 33/s.
        nghttp2_option_set_stream_reset_rate_limit(option, 1000, 33)

        var session: OpaquePointer?
        let user = Unmanaged.passUnretained(handler).toOpaque()
        guard nghttp2_session_server_new2(&session, callbacks, user, option) == 0, let session else { return nil }
        let settings: [(nghttp2_settings_id, UInt32)] = [
            (NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, maxConcurrentStreams),
            (NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, streamWindow),
            (NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, UInt32(maxHeaderListSize)),
            (NGHTTP2_SETTINGS_ENABLE_PUSH, 0)
        ]
        guard HTTP2SessionSetup.start(session, settings: settings, connectionWindow: connectionWindow)
        else {
            nghttp2_session_del(session)
            return nil
        }
        return session
    }

    /// The response body's data provider: copies from the stream's output.
    static var dataProvider: nghttp2_data_provider {
        nghttp2_data_provider(
            source: nghttp2_data_source(ptr: nil),
            read_callback: { _, id, buffer, length, flags, _, user in
                owner(user).readBody(id, into: buffer!, length, flags!)
            })
    }
}

private func owner(_ user: UnsafeMutableRawPointer?) -> HTTP2ConnectionHandler {
    Unmanaged<HTTP2ConnectionHandler>.fromOpaque(user!).takeUnretainedValue()
}
