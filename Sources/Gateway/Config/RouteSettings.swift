/// A key for one capability's settings on a route (`RouteOptions.settings`), declared in the
/// capability's own files: its type says what is stored, so the stage that reads the setting
/// gets that type back, and no other capability can read or overwrite it by a name. The shape
/// of swift-service-context's keys (and nginx's per-module `loc_conf`).
protocol RouteSettingKey {
    associatedtype Value: Sendable
}

/// A route's settings of the capabilities that declare their own key, one value per key type.
/// Made once per config by the parser; read when a route's plan is made, never per request.
struct RouteSettings: Sendable {
    private var values: [ObjectIdentifier: any Sendable] = [:]

    subscript<Key: RouteSettingKey>(_ key: Key.Type) -> Key.Value? {
        // The one cast: a value is only ever stored under its own key type, by the setter.
        get { values[ObjectIdentifier(key)] as? Key.Value }
        set { values[ObjectIdentifier(key)] = newValue }
    }

    /// Whether the route has this capability's settings.
    func has<Key: RouteSettingKey>(_ key: Key.Type) -> Bool { values[ObjectIdentifier(key)] != nil }
}
