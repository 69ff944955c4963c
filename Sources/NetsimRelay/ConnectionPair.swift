import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import NetsimAccept
import NetsimCore
import NetsimFaults
import NetsimLink

/// One client connection through the relay: the two legs' channel handlers and the
/// ``ConnectionMachine`` that decides everything. This class only translates: socket events
/// into machine events (with the event loop's time), and the machine's actions into writes,
/// closes, read gates, timers, connects and log lines.
///
/// Everything here runs on the client channel's event loop (the upstream leg is connected on the
/// same loop). `@unchecked Sendable`: loop-confined; scheduled closures and futures capture it.
final class ConnectionPair: FaultTarget, @unchecked Sendable {
    let id: ConnectionID
    /// The whole connection, or one layer of an intercepted one (same id for both layers).
    let layer: ConnectionLayer
    let eventLoop: any EventLoop
    let relay: Relay
    /// How this connection reaches upstream (the relay's, or one given to ``Relay/adopt(_:connector:)``).
    let connector: any UpstreamConnector
    let client: LegHandler
    var upstream: LegHandler?
    /// The upstream leg while its connect is under way (its handler is in place before it).
    var connectingUpstream: LegHandler?
    var machine: ConnectionMachine<ByteBuffer>
    private var timers: [ConnectionTimer: Scheduled<Void>] = [:]
    /// The loop's release timing, looked up when this connection first delays bytes.
    private lazy var releaseTiming: ReleaseTiming? = relay.releaseTiming(for: eventLoop)
    /// Relay-level tasks for this connection (per-connection fault triggers).
    private var tasks: [Scheduled<Void>] = []
    private var draining = false
    /// HTTP observation, when the relay's configuration asks for it.
    var http: HTTPObserver?
    /// While a stand-in acts: the client's requests, parsed to be answered by the relay.
    private var requests: HTTPStreamDecoder<HTTPServerRequestPart>?
    var requestHead: HTTPRequestHead?
    /// Raw UTF-8 in the stand-in's request heads, escaped for the parser.
    var headEscaper = RequestHeadEscaper()
    /// The zero-copy path's state (ConnectionPair+Splice.swift).
    var splicePath = SplicePath()

    /// The stand-in's request parser, made on first use (a stand-in applied mid-connection
    /// parses from its next bytes).
    func requestsParser() -> HTTPStreamDecoder<HTTPServerRequestPart> {
        if let requests { return requests }
        let parser = HTTPStreamDecoder<HTTPServerRequestPart>.requests()
        requests = parser
        return parser
    }

    /// `ownSocket`: the client's channel is a socket the relay's listener accepted, with nothing in
    /// front of the pair's handler (its reads may be timed: ``timesReads``). `openedAt`: see
    /// ``Relay/adoptNow(_:connector:openedAt:)``; now by default.
    init(id: ConnectionID, layer: ConnectionLayer = .whole, relay: Relay, eventLoop: any EventLoop, link: LinkConfiguration,
         connector: any UpstreamConnector, ownSocket: Bool = false, openedAt: NIODeadline? = nil) {
        self.id = id
        self.layer = layer
        self.relay = relay
        self.connector = connector
        self.eventLoop = eventLoop
        self.client = LegHandler(leg: .client)
        self.machine = ConnectionMachine(
            id: id, openedAt: Int64(min(openedAt ?? eventLoop.now, eventLoop.now).uptimeNanoseconds), link: link, seed: relay.configuration.seed,
            bufferLimit: max(1, relay.configuration.bufferLimit), observesHTTP: relay.configuration.observeHTTP && layer.seesHTTP,
            linkEpoch: relay.startedAt, simulatesHandshake: relay.configuration.simulatesHandshake)
        machine.reportsDelays = relay.configuration.delays != nil && layer != .http
        readsMayBeTimed = ownSocket && layer == .whole && relay.configuration.preciseRelease
        client.pair = self
        timeReads(for: link)
    }

    var now: Int64 { Int64(eventLoop.now.uptimeNanoseconds) }

    /// Each leg's reads: may they bypass the machine, and what did (``ReadCycle``).
    private var cycles = PerLeg(ReadCycle())
    /// When the last cycle the machine has not heard of ended (its idle clock).
    private var unreportedAt: Int64 = 0
    private var hasUnreported: Bool { cycles.client.unreported > 0 || cycles.upstream.unreported > 0 }

    /// Feeds the machine one event and carries out what it decided. Re-entrant: an action that
    /// makes a channel fire an event synchronously (writability) adds to the same batch.
    func run(_ event: (inout ConnectionMachine<ByteBuffer>) -> Void) { run(event, beforeActing: {}) }

    /// `beforeActing` runs after the machine decided and before its actions touch a socket: a
    /// release waits for its deadline there, so the deciding is done by the time the bytes may go.
    private func run(_ event: (inout ConnectionMachine<ByteBuffer>) -> Void, beforeActing: () -> Void) {
        if hasUnreported { reportBypassedCycles() }
        event(&machine)
        guard !draining else { return }
        beforeActing()
        draining = true
        var index = 0
        while index < machine.actions.count {
            let action = machine.actions[index]
            index += 1
            execute(action)
        }
        machine.actions.removeAll(keepingCapacity: true)
        cycles.client.mayBypass = machine.canBypass(from: .client)
        cycles.upstream.mayBypass = machine.canBypass(from: .upstream)
        draining = false
        updatePath()
    }

    // MARK: Socket events → machine

    /// Which legs read with the kernel's receive times (``TimedReads``): a leg whose bytes the
    /// link delays or shapes (from when the pair opens, or from the link change that first does),
    /// when the relay releases on time (``RelayConfiguration/preciseRelease``) and the client's
    /// socket is the relay's own, with no TLS or HTTP layer in front of the leg's handler; the
    /// upstream leg only through a plain connector. A leg whose bytes go straight on keeps NIO's
    /// plain reads: the extra read per readiness event would buy it nothing. Once on, a leg stays
    /// timed if its link goes back to unimpaired (its reads are as correct, one read dearer).
    private(set) var timesReads = PerLeg(false)
    /// Whether ``timesReads`` can be on at all for this pair (fixed when it is made).
    private let readsMayBeTimed: Bool
    /// The upstream leg was connected by a plain connector (its channel is a socket of ours).
    private var upstreamIsPlain = false

    /// Turns timed reads on for each leg whose outgoing direction `link` delays or shapes (on
    /// the loop: at `init`, when the pair starts, on every link change).
    func timeReads(for link: LinkConfiguration) {
        guard readsMayBeTimed else { return }
        for leg in [Leg.client, .upstream] where link[leg.outgoing].isImpaired && !timesReads[leg] {
            timesReads[leg] = true
            if leg == .client { client.startTimedReads() } else if upstreamIsPlain { upstream?.startTimedReads() }
        }
    }

    func legActive(_ leg: Leg) {
        if leg == .client, timesReads.client { client.startTimedReads() }
        if leg == .client, machine.phase == .accepted, !started {
            started = true
            relay.start(self)
        }
        // The upstream leg comes up after the machine's last batch: the splice path may start now.
        updatePath()
    }
    private var started = false

    /// The pcap tap sees the wire: never the plaintext of an HTTP layer.
    var tap: (any RelayTap)? { layer == .http ? nil : relay.tap }

    /// `arrivedAt`: when the kernel received the bytes, if the leg's reads know (``TimedReads``);
    /// the machine counts their delay from then instead of from now.
    func received(_ buffer: ByteBuffer, from leg: Leg, arrivedAt: Int64? = nil) {
        if let tap { tap.received(id, leg: leg.side, buffer, at: arrivedAt ?? now) }
        if cycles[leg].mayBypass, let destination = handler(leg.other) {
            // The fast path: no fault, no model, nothing queued (the machine said so).
            if let tap { tap.sent(id, leg: destination.leg.side, buffer, at: now) }
            if splicePath.isIdle {
                destination.write(buffer)
            } else if !holdsBack(.write(destination.leg, buffer)) {
                nioWrite(buffer, to: destination)
            }
            cycles[leg].direct += buffer.readableBytes
            return
        }
        cycles[leg].usedMachine = true
        let now = self.now
        run { $0.received(buffer, from: leg, now: now, arrivedAt: arrivedAt) }
    }

    func readComplete(from leg: Leg) {
        let cycle = cycles[leg]
        (cycles[leg].direct, cycles[leg].usedMachine) = (0, false)
        let count = cycle.direct
        if count > 0, !cycle.usedMachine, cycle.mayBypass, let destination = handler(leg.other) {
            // A cycle that only bypassed ends here as the machine would end it (flush, one
            // `bytes` line), which it is told of before its next event: on a busy connection the
            // machine — generic code, not specialised for ByteBuffer across modules — is left
            // out of every message (measured: ~1–2 µs of a round trip on one core).
            let now = self.now
            destination.flush()
            let kind = EventKind.bytes(leg.outgoing, count: count)
            if layer.records(kind) { relay.eventLog.record(kind, connection: id, at: now) }
            cycles[leg].unreported += count
            unreportedAt = now
            return
        }
        let now = count > 0 ? self.now : 0
        run {
            if count > 0 { $0.deliveredDirectly(from: leg, count: count, now: now) }
            $0.readComplete(from: leg)
        }
    }

    /// Tells the machine of the read cycles ``readComplete(from:)`` ended itself.
    private func reportBypassedCycles() {
        for leg in [Leg.client, .upstream] where cycles[leg].unreported > 0 {
            let count = cycles[leg].unreported
            cycles[leg].unreported = 0
            machine.deliveredAndFlushedDirectly(from: leg, count: count, lastAt: unreportedAt)
        }
    }

    func writabilityChanged(of leg: Leg, writable: Bool) { run { $0.writabilityChanged(of: leg, writable: writable) } }

    func inputClosed(on leg: Leg) {
        let now = self.now
        run { $0.inputClosed(on: leg, now: now) }
        if leg == .client, relay.configuration.forProxyClients, connectingUpstream != nil { letGoIfStillConnecting() }
    }

    func legInactive(_ leg: Leg) {
        legClosed()
        let now = self.now
        run { $0.legInactive(leg, now: now) }
    }

    // MARK: Actions → sockets

    func handler(_ leg: Leg) -> LegHandler? { leg == .client ? client : upstream }

    /// Carries out one action (held instead while bytes ahead of it are still in a splice pipe).
    func execute(_ action: ConnectionAction<ByteBuffer>) {
        if !splicePath.isIdle, holdsBack(action) { return }
        switch action {
        case .write(let leg, let buffer):
            tap?.sent(id, leg: leg.side, buffer, at: now)
            guard let handler = handler(leg) else { break }
            if splicePath.isIdle { handler.write(buffer) } else { nioWrite(buffer, to: handler) }
        case .flush(let leg):
            handler(leg)?.flush()
        case .shutdownOutput(let leg):
            handler(leg)?.shutdownOutput()
        case .reset(let leg):
            endSplicing()
            handler(leg)?.reset()
        case .resetAfterSent(let leg):
            endSplicing()
            handler(leg)?.reset(afterSent: true)
        case .close(let leg):
            endSplicing()
            handler(leg)?.close()
        case .setReads(let leg, let allowed):
            handler(leg)?.setReadsAllowed(allowed)
        case .connectUpstream:
            connectUpstreamWhenOpenable()
        case .arm(let timer, let deadline):
            timers.removeValue(forKey: timer)?.cancel()
            // Releases of delayed bytes are armed early and finished on time (ReleaseTiming).
            let timing = timer.isRelease ? releaseTiming : nil
            let armedAt = timing == nil ? deadline : now
            let armedFor = timing?.armTime(deadline: deadline, now: armedAt) ?? deadline
            timers[timer] = eventLoop.scheduleTask(deadline: .uptimeNanoseconds(UInt64(max(0, armedFor)))) { [self] in
                timers.removeValue(forKey: timer)
                // Woken early for a release: decide it for its deadline while waiting is still
                // allowed, then wait, then write. Measured on this VM after a 50 ms sleep (cold
                // caches): the machine's step ~20 µs, the write and flush ~50 µs; decided after
                // the wait, the step's part came late every time.
                guard let timing else { return run { $0.timerFired(timer, now: self.now) } }
                let releaseAt = timing.fired(armedAt: armedAt, armedFor: armedFor, deadline: deadline, now: self.now)
                run({ $0.timerFired(timer, now: releaseAt) }, beforeActing: { timing.wait(until: releaseAt) })
            }
        case .cancel(let timer):
            timers.removeValue(forKey: timer)?.cancel()
        case .log(let kind):
            if layer.records(kind) { relay.eventLog.record(kind, connection: id, at: now) }
        case .delayed(let direction, let nanoseconds):
            relay.configuration.delays?.delayed(nanoseconds, direction: direction)
        case .peerEnded(let leg, let how):
            tap?.ended(id, leg: leg.side, how, fromPeer: true, at: now)
        case .parseRequests(let buffer):
            parseRequests(buffer)
        case .stopParsingRequests:
            requests = nil
            requestHead = nil
        case .observe(let direction, let buffer):
            http?.observe(buffer, direction)
        case .observeEnded(let direction):
            http?.ended(direction)
        case .finished:
            endSplicing()
            for timer in timers.values { timer.cancel() }
            timers.removeAll()
            for task in tasks { task.cancel() }
            tasks.removeAll()
            client.pair = nil
            upstream?.pair = nil
            relay.finished(self)
        }
    }

    /// Connects once descriptors may be opened (``DescriptorReserve/openable(on:)``): while a
    /// listener waits for descriptors, the few free ones are the runtime's.
    private func connectUpstreamWhenOpenable() {
        guard connector.opensDescriptor || machine.tlsImpersonation != nil else { return connectUpstream() }
        DescriptorReserve.openable(on: eventLoop).whenComplete { [self] result in
            guard machine.phase != .finished else { return }
            switch result {
            case .success: connectUpstream()
            case .failure(let error): upstreamFailed(error)
            }
        }
    }

    private func connectUpstream() {
        let handler = LegHandler(leg: .upstream)
        handler.pair = self
        let started = now
        // `bad-cert`: the relay's own TLS answers instead of upstream.
        let connector: any UpstreamConnector
        if let (kind, fault) = machine.tlsImpersonation {
            do { connector = try relay.badCertConnector(kind, fault: fault, for: id) } catch {
                run { $0.upstreamFailed(.other, detail: "\(fault): cannot make its certificate: \(error)") }
                return
            }
        } else {
            connector = self.connector
        }
        connectingUpstream = handler
        connector.connect(for: id, on: eventLoop, timeout: relay.configuration.connectTimeout) { channel in
            channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(handler) }
        }.whenComplete { [self] result in
            connectingUpstream = nil
            switch result {
            case .success(let channel):
                let now = self.now
                var wanted = false
                upstream = handler
                // Before the machine hears of it, which may let the leg read at once.
                upstreamIsPlain = connector is AddressConnector || connector is HostConnector
                if timesReads.upstream, upstreamIsPlain { handler.startTimedReads() }
                run { wanted = $0.upstreamConnected(after: now - started, upstreamName: connector.name, now: now) }
                if wanted {
                    tapOpened(.upstream)
                } else {
                    upstream = nil
                    handler.pair = nil
                    if machine.clientReset { handler.reset() } else { channel.close(promise: nil) }
                }
            case .failure(let error):
                handler.pair = nil
                upstreamFailed(error)
            }
        }
    }

    // MARK: Relay-level

    /// Runs `body` at `deadline` (event-loop time) unless the connection finished first.
    func schedule(at deadline: Int64, _ body: @escaping @Sendable (any FaultTarget) -> Void) {
        let task = eventLoop.scheduleTask(deadline: .uptimeNanoseconds(UInt64(max(0, deadline)))) { [self] in
            if machine.phase != .finished { body(self) }
        }
        tasks.append(task)
    }

    var stats: ConnectionStats {
        if hasUnreported { reportBypassedCycles() }
        let c = machine.counters
        return ConnectionStats(id: id, deliveredUp: c.deliveredUp, deliveredDown: c.deliveredDown,
                               queuedUp: c.queuedUp, queuedDown: c.queuedDown, peakQueued: c.peakQueued)
    }
}

extension ConnectionTimer {
    fileprivate var isRelease: Bool {
        if case .release = self { return true }
        return false
    }
}
