import NIOCore
import NetsimCore

/// Sees every byte, FIN and RST as it crosses one of the relay's sockets, with the time it
/// crossed — after impairment on the way out. pcap recording is built on this.
///
/// Called on the connection's event loop; implementations must be quick and must not keep the
/// `ByteBuffer` beyond the call without copying what they need.
public protocol RelayTap: AnyObject, Sendable {
    /// A leg's socket is connected: the client leg when the relay accepts, the upstream leg when
    /// its connect completes. `local` is the relay's end.
    func legOpened(_ connection: ConnectionID, leg: Side, local: SocketAddress?, remote: SocketAddress?, at time: Int64)
    /// Bytes read from a leg (they came from that leg's peer). `time` is when the kernel received
    /// them where the leg reads with receive times (a delayed or shaped direction), so it can be
    /// earlier than the time of a write to the same leg reported before it.
    func received(_ connection: ConnectionID, leg: Side, _ bytes: ByteBuffer, at time: Int64)
    /// Bytes written to a leg (they go to that leg's peer).
    func sent(_ connection: ConnectionID, leg: Side, _ bytes: ByteBuffer, at time: Int64)
    /// A FIN or RST on a leg; `fromPeer` is true when the peer sent it, false when the relay did.
    func ended(_ connection: ConnectionID, leg: Side, _ how: CloseKind, fromPeer: Bool, at time: Int64)
}
