// Keys for a capability's own state, one protocol per lifetime. A capability declares its key
// beside the type it keeps (`enum Key: RequestStateKey { typealias Value = MCPCallNote }`):
// the key's type says what is stored, so the stage that reads it gets that type back, and no
// other capability can reach it by a name. The shape of swift-service-context's keys, and of
// nginx's per-module request context (`ngx_http_get_module_ctx`) and Envoy's `FilterState`
// with its `LifeSpan`. Route settings, the fourth lifetime, have `RouteSettingKey`.
//
// Values are classes: a slot is read by an identity compare and an unchecked downcast (the
// setter only ever stores a key's own value type), not a dynamic cast, and a stage that
// changes its state changes it in place.

/// State that lives as long as one request (`RequestContext.state`).
protocol RequestStateKey {
    associatedtype Value: AnyObject
}

/// State that lives as long as one client connection (`ConnectionMemo.state`).
protocol ConnectionStateKey {
    associatedtype Value: AnyObject
}

/// State that lives as long as a connection's memo of the token it was admitted with
/// (`BearerMemo.kept`): what a capability keeps so that the token's next request on the
/// connection is answered without asking again. A new token, route or config generation
/// drops it with the memo.
protocol TokenMemoKey {
    associatedtype Value: AnyObject
}

/// One lifetime's state: a few slots, found by their key's identity. Requests carry none, one
/// or two, so the first is kept inline and the rest scanned; an empty one allocates nothing.
struct StateSlots {
    private var first: (key: ObjectIdentifier, value: AnyObject)?
    private var more: ContiguousArray<(key: ObjectIdentifier, value: AnyObject)> = []

    fileprivate func value(_ key: ObjectIdentifier) -> AnyObject? {
        guard let first else { return nil }
        if first.key == key { return first.value }
        for slot in more where slot.key == key { return slot.value }
        return nil
    }

    fileprivate mutating func set(_ key: ObjectIdentifier, _ value: AnyObject?) {
        if first?.key == key {
            if let value {
                first = (key, value)
            } else {
                first = more.isEmpty ? nil : more.removeFirst()
            }
        } else if let i = more.firstIndex(where: { $0.key == key }) {
            if let value { more[i].value = value } else { more.remove(at: i) }
        } else if let value {
            if first == nil { first = (key, value) } else { more.append((key, value)) }
        }
    }
}

/// A request's capability state (`RequestContext.state`).
struct RequestState {
    private var slots = StateSlots()

    subscript<Key: RequestStateKey>(_ key: Key.Type) -> Key.Value? {
        get { slots.value(ObjectIdentifier(key)).map { unsafeDowncast($0, to: Key.Value.self) } }
        set { slots.set(ObjectIdentifier(key), newValue) }
    }

    /// The key's value, made by `make` on first use.
    mutating func value<Key: RequestStateKey>(_ key: Key.Type, orMake make: () -> Key.Value) -> Key.Value {
        if let value = self[key] { return value }
        let value = make()
        self[key] = value
        return value
    }
}

/// A client connection's capability state (`ConnectionMemo.state`).
struct ConnectionState {
    private var slots = StateSlots()

    subscript<Key: ConnectionStateKey>(_ key: Key.Type) -> Key.Value? {
        get { slots.value(ObjectIdentifier(key)).map { unsafeDowncast($0, to: Key.Value.self) } }
        set { slots.set(ObjectIdentifier(key), newValue) }
    }
}

/// What capabilities keep beside a connection's token memo (`BearerMemo.kept`).
struct TokenMemoState {
    private var slots = StateSlots()

    subscript<Key: TokenMemoKey>(_ key: Key.Type) -> Key.Value? {
        get { slots.value(ObjectIdentifier(key)).map { unsafeDowncast($0, to: Key.Value.self) } }
        set { slots.set(ObjectIdentifier(key), newValue) }
    }

    /// The key's value, made by `make` on first use.
    mutating func value<Key: TokenMemoKey>(_ key: Key.Type, orMake make: () -> Key.Value) -> Key.Value {
        if let value = self[key] { return value }
        let value = make()
        self[key] = value
        return value
    }
}
