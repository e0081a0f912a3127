internal import CNghttp2

/// What the gateway's nghttp2 sessions share, server (`HTTP2Session`) and client
/// (`UpstreamH2Session`) alike: the limits against a peer that floods, and the first
/// SETTINGS with the connection's receive window.
enum HTTP2SessionSetup {
    /// Options both sides set. Received DATA is credited to the peer's windows only once it
    /// was taken (`nghttp2_session_consume`): flow control is the backpressure.
    static func applyCommonLimits(_ option: OpaquePointer) {
        nghttp2_option_set_no_auto_window_update(option, 1)
        // CONTINUATION flood (CVE-2024-27316 class): a header block in at most 9 frames.
        nghttp2_option_set_max_continuations(option, 8)
        // Frames nghttp2 must answer (PING, SETTINGS ACKs) that a peer can make it queue
        // without reading them: past these, the connection is torn down.
        nghttp2_option_set_max_outbound_ack(option, 1000)
        nghttp2_option_set_max_settings(option, 32)
        // Streams are answered in the order they come, whatever priority a peer signals
        // (RFC 9218 §2.1: SETTINGS_NO_RFC7540_PRIORITIES is sent, below), so nghttp2 need
        // not keep closed streams in an RFC 7540 dependency tree: it kept up to the
        // concurrent-stream limit of them per connection, 1.8 MB of the workers' peak heap
        // under h2load -c64 -m10. (With that setting sent, nghttp2 1.52 frees a closed
        // stream at once whatever this option says; see `start` for the rules that costs.)
        nghttp2_option_set_no_closed_streams(option, 1)
    }

    /// Queues the session's SETTINGS and widens its connection window; false when nghttp2
    /// refused (out of memory): the caller deletes the session.
    ///
    /// SETTINGS_NO_RFC7540_PRIORITIES = 1 (RFC 9218 §2.1) turns nghttp2's RFC 7540 priority
    /// tree off, and with it rules of RFC 9113 that nghttp2 (1.52, Debian's) keeps only through
    /// that tree; on a server the gateway's `HTTP2FrameScreen` keeps them instead:
    /// - a PRIORITY frame is checked for its length only: one on stream 0 (§6.3) or making a
    ///   stream depend on itself (RFC 7540 §5.3.1) is not a PROTOCOL_ERROR;
    /// - a stream is freed as it closes (`nghttp2_session_close_stream`), so a HEADERS or DATA
    ///   frame on a stream the client reset or ended finds no stream and is ignored, not a
    ///   STREAM_CLOSED error (§5.1) as on a stream nghttp2 holds.
    /// nghttp2 never refuses a HEADERS frame on a lower stream identifier than one already
    /// opened (§5.1.1: PROTOCOL_ERROR); it ignores it, tree or not. The tree is not turned back
    /// on for these: it would hold up to 128 closed and 100 idle streams per connection (224
    /// bytes each, about 50 KB), let the client's weights order the answers, and still forget
    /// a stream past the 128 last closed.
    static func start(
        _ session: OpaquePointer, settings: [(nghttp2_settings_id, UInt32)], connectionWindow: Int32
    ) -> Bool {
        var entries = (settings + [(NGHTTP2_SETTINGS_NO_RFC7540_PRIORITIES, 1)]).map {
            nghttp2_settings_entry(settings_id: Int32($0.0.rawValue), value: $0.1)
        }
        return nghttp2_submit_settings(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), &entries, entries.count) == 0
            && nghttp2_session_set_local_window_size(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), 0, connectionWindow)
                == 0
    }
}
