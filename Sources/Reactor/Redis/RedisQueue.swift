/// First-in first-out queue with O(1) `popFirst`: replies are matched to commands in the
/// order they were sent, and `Array.removeFirst` would make a deep pipeline quadratic.
struct RedisQueue<Element> {
    private var items: [Element] = []
    private var head = 0

    var isEmpty: Bool { head == items.count }
    var count: Int { items.count - head }
    var first: Element? { isEmpty ? nil : items[head] }

    mutating func append(_ element: Element) { items.append(element) }

    mutating func popFirst() -> Element? {
        guard !isEmpty else { return nil }
        let element = items[head]
        head += 1
        if head == items.count {
            items.removeAll(keepingCapacity: true)
            head = 0
        } else if head >= 1024 && head * 2 >= items.count {
            // Reclaims the consumed prefix once it is at least half the storage.
            items.removeFirst(head)
            head = 0
        }
        return element
    }

    /// Empties the queue and returns what it held, oldest first.
    mutating func removeAll() -> [Element] {
        let rest = Array(items[head...])
        items = []
        head = 0
        return rest
    }
}
