#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import NIOConcurrencyHelpers
import NIOCore
import NetsimCore

/// Keeps a TCP port taken while nothing listens on it: a socket bound to the address and never
/// put into listen.
///
/// Why: `refuse` closes the relay's listener so the kernel answers SYNs with RST. A closed
/// listener frees its port, and any process binding port 0 in the meantime (another test's
/// server, another relay) may be handed it — clients then reach *that* server instead of being
/// refused, and the relay cannot listen again when the fault lifts. A bound socket keeps the
/// port out of the kernel's port-0 choice and of plain binds, while SYNs to it are still refused
/// (a bound socket that does not listen accepts nothing).
///
/// Exclusive when it can be: without `SO_REUSEADDR` no other socket binds the port at all. A
/// shared hold (`SO_REUSEADDR`) is what is left when the port still carries the relay's
/// connections (open, or in TIME_WAIT): it keeps the port out of port 0's choice and of plain
/// binds, but another program's `SO_REUSEADDR` socket may bind it too and listen there (QA 46:
/// Python's http.server took a refused relay's port). When the refusal lifts, the held socket
/// itself becomes the listener (``listening(backlog:)``): releasing an exclusive hold just before
/// a new listener's bind left an instant in which a connect's ephemeral port could take it.
public final class PortHold: Sendable {
    /// The bound socket; nil once released or handed to a listener.
    private let held: NIOLockedValueBox<Int32?>
    /// Bound with `SO_REUSEADDR`: other such sockets can bind the port beside it.
    let isShared: Bool

    /// Binds a new socket to `address`, shared or not. Throws `IOError` if the socket cannot be
    /// made or bound (the port was taken in the instant between the listener's close and this
    /// bind, or is in use and `shared` is false).
    init(_ address: SocketAddress, shared: Bool = true) throws {
        let fd = socket(address.protocol.rawValue, closeOnExecStreamSocketType, 0)
        guard fd >= 0 else { throw IOError(errnoCode: errno, reason: "socket") }
        var on: Int32 = 1
        let bound = (!shared || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, socklen_t(MemoryLayout<Int32>.size)) == 0)
            && address.withSockAddr { bind(fd, $0, socklen_t($1)) } == 0
        guard bound else {
            let code = errno
            close(fd)
            throw IOError(errnoCode: code, reason: "bind \(address)")
        }
        held = NIOLockedValueBox(fd)
        isShared = shared
    }

    /// The held socket; nil once released or listening.
    var descriptor: Int32? { held.withLockedValue { $0 } }

    /// The port it holds (the kernel's choice for port 0).
    var port: Int? { held.withLockedValue { $0.flatMap(BoundPort.of) } }

    /// Frees the port, unless the socket has become a listener (``listening(backlog:)``).
    func release() {
        held.withLockedValue { fd in
            defer { fd = nil }
            return fd
        }.map { _ = close($0) }
    }

    /// Puts the held socket into listen and gives it up: the port goes from held to listened on
    /// with no instant free between, the caller owning the descriptor from then on. Throws
    /// `IOError` if it cannot listen (another program's `SO_REUSEADDR` socket listens on the
    /// port beside a shared hold: `EADDRINUSE`); the hold is then still the owner.
    func listening(backlog: Int32) throws -> Int32 {
        try held.withLockedValue { fd in
            guard let bound = fd else { throw IOError(errnoCode: EBADF, reason: "listen on a released hold") }
            guard listen(bound, backlog) == 0 else { throw IOError(errnoCode: errno, reason: "listen") }
            fd = nil
            return bound
        }
    }

    /// listen(2) again on a listening socket, to set its queue's length (Linux takes the new one).
    static func relisten(_ descriptor: Int32, backlog: Int32) {
        _ = listen(descriptor, backlog)
    }
}

extension PortHold {
    /// Binds a hold on `address` just after its listener was closed, trying again every
    /// millisecond while the port is still in use, for up to `patience`.
    ///
    /// Why: close(2) frees a socket only with the last reference to it, and a process being
    /// spawned at that moment (an exec client, a test's child) holds a copy of every descriptor
    /// until it execs. Until then the listener lives on — it even completes handshakes that
    /// its close then resets — and the hold's bind fails with `EADDRINUSE`. Seen under a busy
    /// test run: the refusal's port was not kept, then handed to someone else.
    static func taking(_ address: SocketAddress, patience: Duration = .milliseconds(250)) async throws -> PortHold {
        try await whileInUse(patience: patience) { try strongest(address) }
    }

    /// Runs `bind` again every millisecond while it fails with `EADDRINUSE`, for up to
    /// `patience`: a socket just closed can live on in a process being spawned (see
    /// ``taking(_:patience:)``), the hold's before a listener's bind as a listener's before a
    /// hold's (a lift's bind failed so in a busy test run: "could not listen again").
    static func whileInUse<T>(patience: Duration = .milliseconds(250), _ bind: () async throws -> T) async throws -> T {
        let deadline = ContinuousClock.now + patience
        while true {
            do {
                return try await bind()
            } catch let error as IOError where error.errnoCode == EADDRINUSE && ContinuousClock.now < deadline {
                try? await Task.sleep(for: .milliseconds(1))
            }
        }
    }

    /// An exclusive hold if the port carries nothing else, else a shared one.
    static func strongest(_ address: SocketAddress) throws -> PortHold {
        do {
            return try PortHold(address, shared: false)
        } catch let error as IOError where error.errnoCode == EADDRINUSE {
            return try PortHold(address, shared: true)
        }
    }

    /// Throws what binding `endpoint` would fail with now (a port another program listens on,
    /// an address this machine does not have), binding nothing: a command checks this before
    /// it truncates the files it will write, so a relay that cannot start leaves them as they
    /// were. A port taken in the instant after still fails the real bind.
    public static func probe(_ endpoint: Endpoint) throws {
        try PortHold(SocketAddress.makeAddressResolvingHost(endpoint.host, port: endpoint.port)).release()
    }
}
