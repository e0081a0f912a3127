import Glibc
import Testing

@testable import Reactor

@Suite struct ListenerTests {
    /// A port held by another listener, even one that shares it (SO_REUSEPORT, as the
    /// workers' do), cannot be claimed: a second gateway there would take a share of the
    /// first one's connections.
    @Test func anAddressSomeoneListensOnIsNotClaimed() throws {
        let fd = try Listener.open(host: "127.0.0.1", port: 0)
        let port = Listener.port(of: fd)
        #expect(throws: ReactorError.self) { try Listener.claim(host: "127.0.0.1", port: port) }
        do {
            try Listener.claim(host: "127.0.0.1", port: port)
        } catch {
            #expect("\(error)".contains("127.0.0.1:\(port): address in use"))
        }
        // Once it is closed, the address is free again; the claim holds nothing itself.
        close(fd)
        try Listener.claim(host: "127.0.0.1", port: port)
        try Listener.claim(host: "127.0.0.1", port: port)
        let again = try Listener.open(host: "127.0.0.1", port: port)
        close(again)
    }

    /// A connection that was accepted on the port and closed leaves the port in TIME_WAIT:
    /// that is no listener, and a restart must not be refused for it.
    @Test func aPortWithAClosedConnectionIsFree() throws {
        let fd = try Listener.open(host: "127.0.0.1", port: 0)
        let port = Listener.port(of: fd)
        var client: TestClient? = try TestClient(port: port)
        var pollfd = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        #expect(poll(&pollfd, 1, 2000) == 1)
        let accepted = accept(fd, nil, nil)
        #expect(accepted >= 0)
        // The server side closes first: its end goes to TIME_WAIT on the listening port.
        close(accepted)
        #expect(client?.closedByPeer() == true)
        client = nil
        close(fd)
        try Listener.claim(host: "127.0.0.1", port: port)
    }

    @Test func portZeroIsAlwaysClaimed() throws {
        try Listener.claim(host: "127.0.0.1", port: 0)
    }
}
