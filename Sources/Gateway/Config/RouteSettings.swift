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
    private var values: [ObjectIdentifier: any AnySetting] = [:]

    subscript<Key: RouteSettingKey>(_ key: Key.Type) -> Key.Value? {
        // Only the setter stores under a key, and always its own value type in a `Setting`:
        // the box read back is that type, with no dynamic cast.
        get { values[ObjectIdentifier(key)].map { unsafeDowncast($0, to: Setting<Key.Value>.self).value } }
        set { values[ObjectIdentifier(key)] = newValue.map(Setting.init) }
    }

    /// Whether the route has this capability's settings.
    func has<Key: RouteSettingKey>(_ key: Key.Type) -> Bool { values[ObjectIdentifier(key)] != nil }
}

/// A route setting's value in its box (`RouteSettings`): a class, so the box read back under a
/// key is downcast by its known type rather than cast from an existential.
private protocol AnySetting: AnyObject, Sendable {}

private final class Setting<Value: Sendable>: AnySetting {
    let value: Value
    init(_ value: Value) { self.value = value }
}
