import NIOCore
import NetsimAccept
import NetsimCore
import NetsimFaults

/// Which path a connection's bytes take, and what waits behind bytes still in a pipe.
///
/// `copy` is NIO's read/write path (the machine shapes, faults act, the tap and HTTP observation
/// see every byte). `splicing` moves bytes with splice(2) (``SpliceForwarder``). Between them:
/// `entering` waits until NIO has written everything it holds; `leaving` drains the pipes.
struct SplicePath {
    enum State { case copy, entering, splicing, leaving, refused }
    var state = State.copy
    var forwarder: SpliceForwarder?
    /// Tells a stale `entering` completion from the current one.
    var generation = 0
    /// Writes, flushes, FINs and closes bound for a leg while its pipe still has bytes, in order
    /// (index 0: bound for upstream, 1: bound for the client).
    var held: [[ConnectionAction<ByteBuffer>]] = [[], []]
    /// Why splicing was refused for this connection (it stays on the copy path).
    var refusal: SpliceError?
    /// Closes and the connection's end, held until both pipes have drained: the machine closes a
    /// leg once it has seen both directions end, but bytes it counts as sent may still be in a pipe.
    var heldUntilDrained: [ConnectionAction<ByteBuffer>] = []
    /// A leg closed: the path ends once the other leg has had the bytes in its pipe.
    var endWhenDrained = false
    /// Writes NIO has been given while entering: entering waits for a barrier no write followed.
    var nioWrites = 0

    /// Nothing is spliced or about to be: bytes go to NIO as they would without a splice path
    /// (the copying path pays nothing for it).
    var isIdle: Bool { state == .copy || state == .refused }
}

/// The zero-copy path (``RelayConfiguration/splice``): a connection with no model, no fault,
/// no tap and no HTTP observation is spliced; the moment one applies it moves back to the copy
/// path, after its pipes have drained, so no byte is lost, duplicated or reordered. Each switch
/// is an event (`path splice`, `path copy`).
extension ConnectionPair {
    /// Nothing needs to see or shape this connection's bytes (plain sockets: checked as it starts).
    private var wantsSplice: Bool {
        guard relay.configuration.splice, layer == .whole, relay.tap == nil, http == nil,
              machine.canBypass(from: .client), machine.canBypass(from: .upstream),
              let upstream, client.isActive, upstream.isActive else { return false }
        return true
    }

    /// After each batch of the machine's actions: enter or leave the splice path.
    func updatePath() {
        switch splicePath.state {
        case .copy:
            // Not while descriptors have run out: its pipes and copies would take the room the
            // reserve gave back to the runtime (QA 42: 48 of 48 while paused, with --splice).
            if wantsSplice, !DescriptorReserve.isGivenBack, !client.outputClosed, upstream?.outputClosed == false { enterSplice() }
        case .entering:
            if !wantsSplice { backToCopy() }
        case .splicing:
            if !wantsSplice { leaveSplice() }
        case .leaving, .refused:
            break
        }
    }

    /// Holds `action` if it is bound for a leg whose pipe still has bytes (or has actions held).
    func holdsBack(_ action: ConnectionAction<ByteBuffer>) -> Bool {
        guard let forwarder = splicePath.forwarder else { return false }
        let leg: Leg
        switch action {
        case .write(let to, _), .flush(let to), .shutdownOutput(let to): leg = to
        case .close, .finished:
            guard !forwarder.isDrained || !splicePath.heldUntilDrained.isEmpty || splicePath.held.contains(where: { !$0.isEmpty }) else { return false }
            splicePath.heldUntilDrained.append(action)
            return true
        default: return false
        }
        let index = leg == .upstream ? 0 : 1
        guard forwarder.hasBytes(toward: leg) || !splicePath.held[index].isEmpty else { return false }
        splicePath.held[index].append(action)
        forwarder.setDrainOnly(toward: leg, true)
        return true
    }

    private func setSpliceHolds(_ holds: Bool) {
        client.setSpliceHolds(holds)
        upstream?.setSpliceHolds(holds)
    }

    private func logPath(_ path: String) {
        relay.eventLog.record(.path(path), connection: id, at: now)
    }

    /// NIO is given `buffer` for `leg` (it left through the copy path). While splicing, the
    /// direction toward `leg` waits until NIO has written it, so no spliced byte overtakes it.
    func nioWrite(_ buffer: ByteBuffer, to leg: LegHandler) {
        leg.write(buffer)
        splicePath.nioWrites += 1
        guard let forwarder = splicePath.forwarder, let done = leg.writesDone() else { return }
        forwarder.pause(toward: leg.leg)
        done.whenComplete { [self] _ in
            guard splicePath.forwarder === forwarder else { return }
            forwarder.resume(toward: leg.leg)
            afterPass(forwarder.pump())
        }
    }

    private func enterSplice() {
        guard splicePath.forwarder == nil, let upstream else { return }
        // The state first: the barrier writes below can fire events that come back here.
        splicePath.state = .entering
        splicePath.generation += 1
        let generation = splicePath.generation, writes = splicePath.nioWrites
        setSpliceHolds(true)
        guard let clientDone = client.writesDone(), let upstreamDone = upstream.writesDone() else { return backToCopy() }
        // NIO may still hold bytes for either socket: splice only after they have gone. NIO may
        // also read once more (a read it had asked for before the hold): then barrier again.
        // On a later turn of the loop: the barrier can complete inside a leg's write event, whose
        // read NIO handles next (NIO handles a socket's write readiness, then the read readiness
        // it took before the hold); splicing at once took the bytes from under that read, which
        // found none. Release builds shrug; debug builds assert (BaseSocketChannel.readable0):
        // 1 run of the relay tests in 30 crashed so.
        EventLoopFuture.andAllComplete([clientDone, upstreamDone], on: eventLoop).whenComplete { [self] _ in
            eventLoop.execute { [self] in
                guard splicePath.state == .entering, splicePath.generation == generation else { return }
                if splicePath.nioWrites != writes {
                    splicePath.state = .copy
                    return enterSplice()
                }
                startSplicing()
            }
        }
    }

    private func backToCopy() {
        splicePath.state = .copy
        splicePath.generation += 1
        setSpliceHolds(false)
    }

    private func startSplicing() {
        guard splicePath.forwarder == nil, wantsSplice, !DescriptorReserve.isGivenBack, let upstream, let clientFD = client.withDescriptor({ $0 }),
              let upstreamFD = upstream.withDescriptor({ $0 }) else { return backToCopy() }
        switch SpliceForwarder.start(on: eventLoop, client: clientFD, upstream: upstreamFD, onReady: { [self] in afterPass($0) }) {
        case .success(let forwarder):
            splicePath.forwarder = forwarder
            splicePath.state = .splicing
            logPath("splice")
            afterPass(forwarder.pump())
        case .failure(let error):
            splicePath.state = .refused
            splicePath.refusal = error
            setSpliceHolds(false)
            logPath("copy: splice unavailable (\(error))")
        }
    }

    private func leaveSplice() {
        guard let forwarder = splicePath.forwarder else { return backToCopy() }
        splicePath.state = .leaving
        forwarder.reading = false
        // The pipes drain as their destinations take bytes; the last pass finishes the switch.
        if forwarder.isDrained { finishLeaving() }
    }

    /// After a pass: accounts the bytes moved, releases what waited behind them, and finishes
    /// a switch to copying once the pipes are empty.
    private func afterPass(_ pass: SpliceForwarder.Pass) {
        guard let forwarder = splicePath.forwarder else { return }
        for (index, count) in pass.moved.enumerated() where count > 0 {
            let leg: Leg = index == 0 ? .client : .upstream
            let now = self.now
            run {
                $0.deliveredDirectly(from: leg, count: count, now: now)
                $0.readComplete(from: leg)
            }
        }
        guard splicePath.forwarder === forwarder else { return }
        for (leg, errno) in pass.failed {
            failed(leg, error: IOError(errnoCode: errno, reason: "splice"))
            guard splicePath.forwarder === forwarder else { return }
        }
        if releaseHeld(all: false) {
            // Reading resumes behind what was released: pump again (on a later turn of the loop).
            eventLoop.execute { [self] in
                if splicePath.forwarder === forwarder { afterPass(forwarder.pump()) }
            }
        }
        if !splicePath.heldUntilDrained.isEmpty || splicePath.endWhenDrained, forwarder.isDrained, !splicePath.held.contains(where: { !$0.isEmpty }) {
            endSplicing()
        } else if let refused = pass.refused, splicePath.refusal == nil {
            splicePath.refusal = refused
            leaveSplice()
        } else if splicePath.state == .leaving, forwarder.isDrained {
            finishLeaving()
        }
    }

    /// Carries out held actions whose pipe has drained (or all of them).
    @discardableResult
    private func releaseHeld(all: Bool) -> Bool {
        var released = false
        for index in 0..<2 where !splicePath.held[index].isEmpty {
            if !all, splicePath.forwarder?.hasBytes(toward: index == 0 ? .upstream : .client) == true { continue }
            let actions = splicePath.held[index]
            splicePath.held[index] = []
            // Held writes go to NIO first (the direction then waits until NIO has written them).
            for action in actions { execute(action) }
            splicePath.forwarder?.setDrainOnly(toward: index == 0 ? .upstream : .client, false)
            released = true
        }
        return released
    }

    private func finishLeaving() {
        splicePath.forwarder?.close()
        splicePath.forwarder = nil
        releaseHeld(all: true)
        let last = splicePath.heldUntilDrained
        splicePath.heldUntilDrained = []
        for action in last { execute(action) }
        splicePath.state = splicePath.refusal == nil ? .copy : .refused
        setSpliceHolds(false)
        logPath(splicePath.refusal.map { "copy: splice refused (\($0))" } ?? "copy")
    }

    /// A leg's channel closed: bytes bound for the other leg may still be in a pipe; the path
    /// ends once they are delivered (at once if none are).
    func legClosed() {
        guard let forwarder = splicePath.forwarder, !forwarder.isDrained || splicePath.held.contains(where: { !$0.isEmpty }) else {
            return endSplicing()
        }
        forwarder.reading = false
        splicePath.endWhenDrained = true
    }

    /// The connection resets or ends: the splice path ends at once (a reset discards what was in flight;
    /// anything held is carried out, so a FIN or close waiting behind the pipe is not lost).
    func endSplicing() {
        guard let forwarder = splicePath.forwarder else {
            if splicePath.state == .entering { backToCopy() }
            return
        }
        forwarder.close()
        splicePath.forwarder = nil
        splicePath.endWhenDrained = false
        splicePath.state = splicePath.refusal == nil ? .copy : .refused
        releaseHeld(all: true)
        let last = splicePath.heldUntilDrained
        splicePath.heldUntilDrained = []
        for action in last { execute(action) }
    }
}
