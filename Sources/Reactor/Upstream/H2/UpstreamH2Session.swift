internal import CNghttp2

/// The nghttp2 client session of one HTTP/2 upstream connection, with the limits the
/// gateway relies on, its callbacks wired to the connection. As on the server side, the
/// callbacks only record (a head's fields, body bytes, a stream's end) on the stream's call;
/// the calls' delegates hear of it once `nghttp2_session_mem_recv` has returned
/// (`UpstreamH2Connection.deliver`).
enum UpstreamH2Session {
    /// Each stream's receive window: the most response bytes one stream holds that its
    /// client has not taken yet (a slow reader's answer), RFC 9113 §6.9.2.
    static let streamWindow: UInt32 = 256 << 10
    /// The connection's receive window, across all its streams.
    static let connectionWindow: Int32 = 4 << 20
    /// Streams one connection carries at most, whatever the upstream allows.
    static let maxStreams = 128

    static func make(for connection: UpstreamH2Connection, maxHeaderListSize: Int) -> OpaquePointer? {
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
        nghttp2_session_callbacks_set_on_stream_close_callback(callbacks) { _, id, code, user in
            owner(user).streamClosed(id, code)
        }

        var option: OpaquePointer?
        guard nghttp2_option_new(&option) == 0, let option else { return nil }
        defer { nghttp2_option_del(option) }
        // Response bytes are credited to the upstream's windows only once the client took
        // them: a slow reader holds back its own stream, not the connection's others.
        HTTP2SessionSetup.applyCommonLimits(option)
        // Until the upstream's SETTINGS say otherwise (RFC 9113 §6.5.2 allows any number).
        nghttp2_option_set_peer_max_concurrent_streams(option, 100)

        var session: OpaquePointer?
        let user = Unmanaged.passUnretained(connection).toOpaque()
        guard nghttp2_session_client_new2(&session, callbacks, user, option) == 0, let session else { return nil }
        let settings: [(nghttp2_settings_id, UInt32)] = [
            (NGHTTP2_SETTINGS_ENABLE_PUSH, 0),
            (NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, streamWindow),
            (NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, UInt32(maxHeaderListSize))
        ]
        guard HTTP2SessionSetup.start(session, settings: settings, connectionWindow: connectionWindow)
        else {
            nghttp2_session_del(session)
            return nil
        }
        return session
    }

    /// The request body's data provider: copies from the call's queued body bytes.
    static var dataProvider: nghttp2_data_provider {
        nghttp2_data_provider(
            source: nghttp2_data_source(ptr: nil),
            read_callback: { _, id, buffer, length, flags, _, user in
                owner(user).readBody(id, into: buffer!, length, flags!)
            })
    }
}

private func owner(_ user: UnsafeMutableRawPointer?) -> UpstreamH2Connection {
    Unmanaged<UpstreamH2Connection>.fromOpaque(user!).takeUnretainedValue()
}
