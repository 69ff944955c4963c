import NIOCore
import NIOPosix
import NetsimCore
import NetsimLink

extension ConnectionPair {
    /// Connects the upstream leg after the delays the faults and the SYN-loss model ask for.
    /// While it waits the client leg is not read, so the client's bytes wait in its socket.
    func beginConnect(link: LinkConfiguration) {
        guard phase == .accepted else { return }
        if activeStandIn != nil {
            // The relay answers every request itself (outage, portal): no upstream connect until it lifts.
            phase = .relaying
            updateReadGates()
            return
        }
        phase = .connecting
        var synRandom = random.derived(SeededRandom.label("syn"))
        switch ConnectModel.outcome(link: link, random: &synRandom) {
        case .connect(let afterNanoseconds):
            if afterNanoseconds > 0 {
                log(.faultFired(fault: "syn-loss", detail: "lost SYNs delay the upstream connect by \(formatNanoseconds(afterNanoseconds))"))
            }
            schedule(after: connectDelay + afterNanoseconds) { $0.connectUpstream() }
            updateReadGates()
        case .timeout(let afterNanoseconds):
            log(.faultFired(fault: "syn-loss", detail: "every SYN lost; the connect times out after \(formatNanoseconds(afterNanoseconds))"))
            schedule(after: afterNanoseconds) { pair in
                pair.upstreamFailed(.timeout, detail: "no SYN got through (loss)")
            }
        }
    }

    /// Runs `body` on the event loop after `nanoseconds` (now, if zero), unless the pair finished.
    func schedule(after nanoseconds: Int64, _ body: @escaping @Sendable (ConnectionPair) -> Void) {
        if nanoseconds <= 0 {
            body(self)
            return
        }
        let task = eventLoop.scheduleTask(in: .nanoseconds(nanoseconds)) { [self] in
            if phase != .finished { body(self) }
        }
        timers.append(task)
    }

    func connectUpstream() {
        guard phase == .connecting, !connectInFlight, upstream == nil else { return }
        if isBlackholed {
            connectHeldByBlackhole = true  // connects when the blackhole lifts
            return
        }
        connectInFlight = true
        let handler = LegHandler(side: .upstream)
        handler.pair = self
        let started = now
        ClientBootstrap(group: eventLoop)
            .connectTimeout(.nanoseconds(relay.configuration.connectTimeout.nanoseconds))
            .channelOption(ChannelOptions.allowRemoteHalfClosure, value: true)
            .channelOption(ChannelOptions.socketOption(.tcp_nodelay), value: 1)
            .channelOption(ChannelOptions.recvAllocator, value: Relay.receiveAllocator)
            .channelOption(ChannelOptions.maxMessagesPerRead, value: Relay.readsPerCycle)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(handler)
                }
            }
            .connect(to: relay.upstreamAddress)
            .whenComplete { [self] result in
                connectInFlight = false
                switch result {
                case .success(let channel):
                    upstreamConnected(handler, channel: channel, after: now - started)
                case .failure(let error):
                    handler.pair = nil
                    let (reason, detail) = Self.classify(error)
                    upstreamFailed(reason, detail: detail)
                }
            }
    }

    private func upstreamConnected(_ handler: LegHandler, channel: any Channel, after: Int64) {
        guard phase == .connecting, client.isActive, !discarding else {
            // The client left (or a fault closed it) while we were connecting.
            handler.pair = nil
            channel.close(promise: nil)
            checkFinished()
            return
        }
        upstream = handler
        phase = .relaying
        log(.upstreamConnected(upstream: relay.configuration.upstream.description, after: after))
        tapOpened(.upstream)
        updateReadGates()
        for direction in Direction.allCases { deliverDue(direction) }
    }

    /// Shows the client the same kind of failure the relay met: a refused or unreachable upstream
    /// resets the client (the closest an accepted connection can come to a refusal), a timeout
    /// leaves it in silence until it gives up.
    func upstreamFailed(_ reason: UpstreamFailure, detail: String) {
        guard phase == .connecting, client.isActive else {
            checkFinished()
            return
        }
        phase = .relaying
        log(.upstreamFailed(reason: reason, detail: detail))
        switch reason {
        case .timeout:
            discarding = true
            updateReadGates()
        case .refused, .unreachable, .other:
            if ending == nil { ending = (.upstream, .rst) }
            client.reset()
        }
        checkFinished()
    }

    static func classify(_ error: any Error) -> (UpstreamFailure, String) {
        if case ChannelError.connectTimeout = error { return (.timeout, "connect timed out") }
        if let io = error as? IOError {
            switch io.errnoCode {
            case ECONNREFUSED: return (.refused, "connection refused")
            case ETIMEDOUT: return (.timeout, "connect timed out")
            case EHOSTUNREACH, ENETUNREACH: return (.unreachable, String(describing: io))
            default: return (.other, String(describing: io))
            }
        }
        return (.other, String(describing: error))
    }
}
