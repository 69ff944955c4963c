#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import NIOConcurrencyHelpers
import NIOCore
import NetsimCore
import NetsimRelay

/// Records a relay's traffic to a pcap file: pass it as the relay's `tap`.
///
/// Each relayed connection becomes two TCP conversations in the file, one per leg: client ↔
/// relay (the client's SYN to the relay's listening port) and relay ↔ upstream (the relay's SYN
/// from its own ephemeral port). Packets are timed when the bytes crossed that socket, after
/// impairment, so the two legs of one connection show the delays and losses netsim applied.
/// FIN and RST appear exactly where they happened and from whoever sent them.
///
/// Taps are called from every event loop at once, so one lock guards the file and the state.
/// The loops also report out of time order (one loop's packet stamped 9 ms before another's it
/// follows), so packets are held back ``reorderWindow`` and written in time order: a capture
/// whose time goes backwards across conversations confuses tools that expect it sorted
/// (`mergecap` merges files assuming each is).
public final class PcapRecorder: RelayTap, @unchecked Sendable {
    private struct LegKey: Hashable {
        var connection: ConnectionID
        var leg: Side
    }

    private struct Leg {
        var tcp: SyntheticConnection
        /// The peer's role: the client initiated the client leg; the relay initiated the upstream leg.
        var peer: SyntheticConnection.Role
        /// The latest time written for this leg: a flow's packets never go back in time.
        var lastTime: Int64 = 0
    }

    private let lock = NIOLock()
    private let writer: PcapFileWriter
    private var legs: [LegKey: Leg] = [:]
    private var packets = 0
    private var closed = false
    private var delayedFlush = DelayedFlush()
    /// Packets not yet written, in time order (see ``reorderWindow``).
    private var held: [(time: Int64, bytes: [UInt8])] = []
    /// How long a packet is held for a packet stamped earlier that another loop has yet to report.
    static let reorderWindow: Int64 = 100_000_000
    private var heldBytes = 0
    /// Past this many held bytes, the packets older than the window are written without waiting
    /// for the flush, and then the oldest until it is met: bounded memory at any rate (at 1 Gbit/s
    /// the window alone holds 12.5 MB; order across loops then holds for a shorter span).
    static let heldByteLimit = 4 << 20
    /// Wall-clock minus monotonic, in nanoseconds: tap times are monotonic, pcap times are not.
    private let wallOffset: Int64

    public var path: String { writer.path }

    /// Creates (or truncates) the capture file.
    public init(path: String) throws {
        writer = try PcapFileWriter(path: path)
        wallOffset = Self.clockNanoseconds(CLOCK_REALTIME) - Self.clockNanoseconds(CLOCK_MONOTONIC)
    }

    /// Packets written so far.
    public var packetCount: Int { lock.withLock { packets } }

    /// Flushes and closes the file. Later tap calls are ignored.
    public func close() {
        lock.withLock {
            guard !closed else { return }
            closed = true
            write(heldBefore: .max)
            writer.close()
        }
    }

    /// Makes everything recorded so far visible to readers of the file, but the packets of the
    /// last ``reorderWindow``, which a flush soon after writes.
    public func flush() {
        lock.withLock {
            delayedFlush.flushed()
            guard !closed else { return }
            write(heldBefore: Self.clockNanoseconds(CLOCK_MONOTONIC) - Self.reorderWindow)
            writer.flush()
            if !held.isEmpty { delayedFlush.written(after: .milliseconds(Int(Self.reorderWindow / 1_000_000))) { [weak self] in self?.flush() } }
        }
    }

    // MARK: RelayTap

    public func legOpened(_ connection: ConnectionID, leg: Side, local: SocketAddress?, remote: SocketAddress?, at time: Int64) {
        let key = LegKey(connection: connection, leg: leg)
        let relayEnd = IPAddressText.endpoint(local)
        let peerEnd = IPAddressText.endpoint(remote)
        lock.withLock {
            guard !closed, legs[key] == nil else { return }
            open(key, relayEnd: relayEnd, peerEnd: peerEnd, at: time)
        }
    }

    public func received(_ connection: ConnectionID, leg: Side, _ bytes: ByteBuffer, at time: Int64) {
        record(connection, leg, at: time) { state in
            bytes.withUnsafeReadableBytes { state.tcp.data(from: state.peer, $0) }
        }
    }

    public func sent(_ connection: ConnectionID, leg: Side, _ bytes: ByteBuffer, at time: Int64) {
        record(connection, leg, at: time) { state in
            bytes.withUnsafeReadableBytes { state.tcp.data(from: state.peer.other, $0) }
        }
    }

    public func ended(_ connection: ConnectionID, leg: Side, _ how: CloseKind, fromPeer: Bool, at time: Int64) {
        record(connection, leg, at: time) { state in
            let sender = fromPeer ? state.peer : state.peer.other
            return how == .fin ? state.tcp.fin(from: sender) : state.tcp.rst(from: sender)
        }
    }

    // MARK: State

    private func record(_ connection: ConnectionID, _ leg: Side, at time: Int64, _ make: (inout Leg) -> [[UInt8]]) {
        let key = LegKey(connection: connection, leg: leg)
        lock.withLock {
            // A leg that ended (both FINs, or an RST) is forgotten: what the relay reports after
            // that (closing a socket the peer already reset) is not on the wire.
            guard !closed, legs[key] != nil else { return }
            let output = make(&legs[key]!)
            // Bytes read with the kernel's receive time (RelayTap) may be stamped before a write
            // the relay made to the same leg while they waited to be read.
            let time = max(time, legs[key]!.lastTime)
            legs[key]!.lastTime = time
            emit(output, at: time)
            if legs[key]!.tcp.isOver { legs[key] = nil }
        }
    }

    /// Called with the lock held.
    private func open(_ key: LegKey, relayEnd: PacketEndpoint?, peerEnd: PacketEndpoint?, at time: Int64) {
        var relay = relayEnd ?? Self.placeholder(key, relaySide: true)
        var peer = peerEnd ?? Self.placeholder(key, relaySide: false)
        // One conversation has one address family.
        if relay.isIPv6 != peer.isIPv6 {
            relay = Self.placeholder(key, relaySide: true)
            peer = Self.placeholder(key, relaySide: false)
        }
        let isn = UInt32(truncatingIfNeeded: key.connection.raw &* 0x9E37_79B9) ^ (key.leg == .client ? 0x1000 : 0x2000)
        let state: Leg
        if key.leg == .client {
            state = Leg(tcp: SyntheticConnection(initiator: peer, responder: relay, initialSequence: isn), peer: .initiator)
        } else {
            state = Leg(tcp: SyntheticConnection(initiator: relay, responder: peer, initialSequence: isn), peer: .responder)
        }
        legs[key] = state
        emit(legs[key]!.tcp.handshake(), at: time)
    }

    /// Documentation addresses (TEST-NET-1, RFC 5737) for a leg whose socket address is unknown
    /// (not an IP socket).
    private static func placeholder(_ key: LegKey, relaySide: Bool) -> PacketEndpoint {
        let host: UInt8 = relaySide ? 1 : (key.leg == .client ? 2 : 3)
        let port = relaySide ? UInt16(truncatingIfNeeded: 40_000 + key.connection.raw % 20_000) : (key.leg == .client ? 50_000 : 80)
        return PacketEndpoint(address: [192, 0, 2, host], port: port)
    }

    /// Holds `output` in time order. Called with the lock held.
    private func emit(_ output: [[UInt8]], at time: Int64) {
        guard !output.isEmpty else { return }
        // Mostly in order already: the place is found from the back.
        var at = held.endIndex
        while at > held.startIndex, held[at - 1].time > time { at -= 1 }
        held.insert(contentsOf: output.map { (time, $0) }, at: at)
        packets += output.count
        heldBytes += output.reduce(0) { $0 + $1.count }
        if heldBytes > Self.heldByteLimit {
            write(heldBefore: held[held.count - 1].time - Self.reorderWindow)
            write(heldBefore: .max, downTo: Self.heldByteLimit)
        }
        delayedFlush.written { [weak self] in self?.flush() }
    }

    /// Writes the held packets stamped before `time`, oldest first, stopping once no more than
    /// `bytes` are held. Called with the lock held.
    private func write(heldBefore time: Int64, downTo bytes: Int = 0) {
        var count = 0
        while count < held.count, held[count].time < time, heldBytes > bytes {
            writer.write(held[count].bytes, nanoseconds: held[count].time + wallOffset)
            heldBytes -= held[count].bytes.count
            count += 1
        }
        held.removeFirst(count)
    }

    private static func clockNanoseconds(_ clock: clockid_t) -> Int64 {
        var spec = timespec()
        clock_gettime(clock, &spec)
        return Int64(spec.tv_sec) * 1_000_000_000 + Int64(spec.tv_nsec)
    }
}
