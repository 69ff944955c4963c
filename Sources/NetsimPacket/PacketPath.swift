#if canImport(Glibc)
import CNetsimPacket
import Foundation
import Glibc
import NetsimCore

/// The running packet path of one namespace: a thread that reads both TUN devices, filters,
/// impairs through one ``PacketShaper`` per direction and writes each packet out on time.
///
/// One thread and `ppoll`, no event loop: a packet's write time is decided when it is read, and
/// ppoll's nanosecond timeout wakes the thread for the earliest one, so a single thread carries
/// both directions without locks on the data path (the counters are published under a lock).
public final class PacketPath: @unchecked Sendable {
    private let namespace: PacketNamespace
    private var filter: PacketFilter
    private var shapers: [PacketShaper]  // [up, down]
    private var schedules = [ReleaseSchedule<[UInt8]>(), ReleaseSchedule<[UInt8]>()]
    private let tap: PacketTap?
    private let clock = SystemClock()
    /// The thread's release timing: a sleep to the next release is cut short by the wake-up
    /// lateness this thread has seen and finished with a spin (``EarlyWakeUp``; at most 2% of a
    /// core, nothing while no packet is scheduled), as the relay's event loops do.
    private let timing = ReleaseTiming()
    private let lock = NSLock()
    /// The counters as last published (under `lock`).
    private var published = PacketCounters()
    private var stopRequested = false
    /// The thread's own counters, published after each pass.
    private var live = PacketCounters()
    private let wake: Int32
    private var thread: Thread?
    private let finished = DispatchSemaphore(value: 0)
    private let faultSchedule: [ScheduledPacketFault]
    private let events: EventLog?
    /// Made when the thread starts (the timeline's origin).
    private var faults: PacketFaultDriver?
    /// What other threads asked for (``inject(_:for:)``, ``lift(_:)``, ``setLink(_:)``), taken by
    /// the path's thread on its next pass (under `lock`).
    private var commands: [PacketPathCommand] = []
    private var nextFaultID: UInt64 = 1
    private let random: SeededRandom
    private var linkChanges = 0
    /// Records the client's connections — opened, half-closed, closed — in `events` (a scenario run).
    private var observer: ConnectionObserver?

    /// Largest packet a TUN device hands over (its MTU is 1500; 64 KiB covers any setting).
    static let bufferSize = 65536
    /// Packets read from one device before the other gets its turn and due packets go out.
    static let readBatch = 64

    /// `faults` play on a timeline that starts with the path; they, and every packet they drop or
    /// answer, are recorded in `events`.
    public init(namespace: PacketNamespace, link: PacketLinkConfiguration, seed: UInt64, tap: PacketTap?,
                faults: [ScheduledPacketFault] = [], events: EventLog? = nil, observeConnections: Bool = false) throws {
        self.namespace = namespace
        self.random = SeededRandom(seed: seed)
        observer = observeConnections && events != nil ? ConnectionObserver() : nil
        faultSchedule = faults
        self.events = events
        filter = PacketFilter(plan: namespace.plan)
        shapers = Direction.allCases.map { [random] direction in
            PacketShaper(link: link[direction], random: random.derived(SeededRandom.label("packet-" + direction.rawValue)))
        }
        if Direction.allCases != [.up, .down] { fatalError("Direction order changed") }
        self.tap = tap
        wake = cnetsim_eventfd()
        guard wake >= 0 else { throw PacketPathError.system("eventfd", errno) }
    }

    deinit { Glibc.close(wake) }

    /// What has happened so far.
    public var counters: PacketCounters { lock.withLock { published } }

    /// CPU time the thread has spent waiting on the CPU for releases (its early wake-ups).
    public var spunNanoseconds: Int64 { timing.spunNanoseconds }

    public func start() {
        let thread = Thread { [self] in
            run()
            finished.signal()
        }
        thread.name = "netsim packet path"
        thread.qualityOfService = .userInteractive
        self.thread = thread
        thread.start()
    }

    /// Stops the thread (packets still waiting are dropped: the namespace is going away) and
    /// returns the final counts.
    @discardableResult
    public func stop() -> PacketCounters {
        guard thread != nil else { return counters }
        lock.withLock { stopRequested = true }
        wakeUp()
        finished.wait()
        thread = nil
        tap?.finish()
        faults?.finish()
        return counters
    }

    /// Starts `fault` now, for `length` (nil: until lifted); the id lifts it.
    @discardableResult
    public func inject(_ fault: PacketFault, for length: Duration? = nil) -> PacketFaultID {
        let id = lock.withLock { () -> PacketFaultID in
            defer { nextFaultID += 1 }
            let id = PacketFaultID(raw: nextFaultID)
            commands.append(.inject(fault, length: length?.nanoseconds, id: id))
            return id
        }
        wakeUp()
        return id
    }

    /// Lifts a fault ``inject(_:for:)`` started (a no-op once it has ended).
    public func lift(_ id: PacketFaultID) {
        lock.withLock { commands.append(.lift(id)) }
        wakeUp()
    }

    /// Lifts every fault ``inject(_:for:)`` started.
    public func liftAll() {
        lock.withLock { commands.append(.liftAll) }
        wakeUp()
    }

    /// Changes the link from the next packet on; packets in flight keep their release times, and
    /// no packet overtakes one already in flight because of the change.
    public func setLink(_ link: PacketLinkConfiguration) {
        lock.withLock { commands.append(.setLink(link)) }
        events?.record(.linkChanged(description: link.description))
        wakeUp()
    }

    private func wakeUp() {
        var one: UInt64 = 1
        _ = write(wake, &one, 8)
    }

    /// Carries out what other threads asked for, on the path's thread.
    private func takeCommands(now: Int64) {
        let taken = lock.withLock { () -> [PacketPathCommand] in
            defer { commands = [] }
            return commands
        }
        for command in taken {
            switch command {
            case .inject(let fault, let length, let id): faults?.add(fault, length: length, id: id, at: now)
            case .lift(let id): faults?.lift(id, at: now)
            case .liftAll: faults?.liftAll(at: now)
            case .setLink(let link):
                linkChanges += 1
                for (d, direction) in Direction.allCases.enumerated() {
                    let stream = random.derived(SeededRandom.label("packet-\(direction.rawValue)-change-\(linkChanges)"))
                    shapers[d] = PacketShaper(link: link[direction], random: stream, continuing: shapers[d])
                }
            }
        }
    }

    private func run() {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: Self.bufferSize, alignment: 16)
        defer { buffer.deallocate() }
        var fds = [
            pollfd(fd: namespace.clientDevice.descriptor, events: Int16(POLLIN), revents: 0),
            pollfd(fd: namespace.hostDevice.descriptor, events: Int16(POLLIN), revents: 0),
            pollfd(fd: wake, events: Int16(POLLIN), revents: 0),
        ]
        faults = PacketFaultDriver(schedule: faultSchedule, namespace: namespace, events: events, origin: clock.now())
        while !lock.withLock({ stopRequested }) {
            let now = clock.now()
            takeCommands(now: now)
            faults?.advance(to: now, filter: &filter)
            writeDue(now: now)
            publish()
            let next = [schedules[0].nextTime, schedules[1].nextTime, faults?.nextTime].compactMap { $0 }.min()
            let armedFor = next.map { timing.armTime(deadline: $0, now: now) }
            let timeout = armedFor.map { max(0, $0 - now) } ?? -1
            for i in fds.indices { fds[i].revents = 0 }
            let ready = fds.withUnsafeMutableBytes { cnetsim_ppoll($0.baseAddress, UInt(3), timeout) }
            if ready == 0, let next, let armedFor {
                // Woken by the timeout, maybe early on purpose: wait out the rest on the CPU.
                timing.wait(until: timing.fired(armedAt: now, armedFor: armedFor, deadline: next, now: clock.now()))
            }
            if fds[2].revents & Int16(POLLIN) != 0 {
                var count: UInt64 = 0
                _ = read(wake, &count, 8)
            }
            if ready <= 0 { continue }
            if fds[0].revents & Int16(POLLIN) != 0 { readAll(from: namespace.clientDevice, direction: .up, buffer: buffer) }
            if fds[1].revents & Int16(POLLIN) != 0 { readAll(from: namespace.hostDevice, direction: .down, buffer: buffer) }
        }
        live.up.inFlightAtExit = schedules[0].count
        live.down.inFlightAtExit = schedules[1].count
        publish()
    }

    private func readAll(from device: TunDevice, direction: Direction, buffer: UnsafeMutableRawBufferPointer) {
        for _ in 0..<Self.readBatch {
            guard let count = device.read(into: buffer) else { return }
            let packet = UnsafeRawBufferPointer(rebasing: buffer[0..<count])
            if direction == .up { tap?.record(packet, wallNanoseconds: Self.wallNow()) }
            handle(packet, direction: direction, now: clock.now())
        }
    }

    /// Filter, faults, then the shaper's decision; each surviving copy is scheduled.
    private func handle(_ packet: UnsafeRawBufferPointer, direction: Direction, now: Int64) {
        live[direction].received += 1
        live[direction].receivedBytes += packet.count
        let header: IPHeader
        let checked = filter.check(packet, direction: direction)
        if observer != nil, case .success(let parsed) = checked { observe(packet, header: parsed, direction: direction, now: now) }
        if let faults {
            let parsed = try? checked.get()
            let verdict = faults.judge(packet, header: parsed ?? IPHeader(packet), refused: parsed == nil, direction: direction, now: now)
            switch verdict {
            case .pass:
                break
            case .drop:
                live[direction].faultDropped += 1
                return
            case .reset(_, let toClient, let toHost, _):
                live[direction].faultDropped += 1
                live.resetsSent += 2
                for (reply, way) in [(toClient, Direction.down), (toHost, Direction.up)] {
                    reply.withUnsafeBytes { bytes in
                        if observer != nil, let parsed = IPHeader(bytes) { observe(bytes, header: parsed, direction: way, now: now) }
                        shape(bytes, headerLength: IPHeader(bytes)?.headerLength ?? 20, direction: way, now: now)
                    }
                }
                return
            }
        }
        switch checked {
        case .failure(let reason):
            live[direction].filtered += 1
            switch reason {
            case .notIP: live.notIP += 1
            case .notForHost: live.notForHost += 1
            case .notFromHost: break
            }
            return
        case .success(let h):
            header = h
        }
        shape(packet, headerLength: header.headerLength, direction: direction, now: now)
    }

    /// Records what `packet` does to the client's connections (a scenario run's log).
    private func observe(_ packet: UnsafeRawBufferPointer, header: IPHeader, direction: Direction, now: Int64) {
        guard let (id, change) = observer?.observe(packet, header: header, direction: direction) else { return }
        let kind: EventKind = switch change {
        case .opened(let client): .opened(client: client)
        case .halfClosed(let side): .halfClosed(by: side)
        case .closed(let side, let how, let up, let down): .closed(by: side, how: how, upBytes: up, downBytes: down)
        }
        events?.record(kind, connection: id, at: now)
    }

    /// The shaper's decision on a packet travelling `direction`; each surviving copy is scheduled.
    private func shape(_ packet: UnsafeRawBufferPointer, headerLength: Int, direction: Direction, now: Int64) {
        let d = direction == .up ? 0 : 1
        let outcome = shapers[d].offer(size: packet.count, headerLength: headerLength, at: now)
        // Every copy made, lost or not (QA 38: only delivered copies were counted, and the
        // summary did not add up).
        live[direction].duplicated += outcome.duplicates
        for drop in outcome.drops {
            switch drop {
            case .lost: live[direction].lost += 1
            case .queueFull: live[direction].queueFull += 1
            }
        }
        for release in outcome.releases {
            var copy = [UInt8](packet)
            if let bit = release.corruptBit {
                copy[bit / 8] ^= UInt8(1 << (bit % 8))
                live[direction].corrupted += 1
            }
            if release.isReordered { live[direction].reordered += 1 }
            schedules[d].schedule(copy, at: release.time)
        }
    }

    private func writeDue(now: Int64) {
        for direction in Direction.allCases {
            let d = direction == .up ? 0 : 1
            let device = direction == .up ? namespace.hostDevice : namespace.clientDevice
            while let packet = schedules[d].popDue(now: now) {
                let written = packet.withUnsafeBytes { bytes -> Bool in
                    if direction == .down { tap?.record(bytes, wallNanoseconds: Self.wallNow()) }
                    return device.write(bytes)
                }
                if written {
                    live[direction].delivered += 1
                    live[direction].deliveredBytes += packet.count
                } else {
                    live[direction].writeFailed += 1
                }
            }
        }
    }

    private func publish() {
        let snapshot = live
        lock.withLock { published = snapshot }
    }

    static func wallNow() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return Int64(ts.tv_sec) * 1_000_000_000 + Int64(ts.tv_nsec)
    }
}
/// Identifies a fault ``PacketPath/inject(_:for:)`` started, to lift it.
public struct PacketFaultID: Hashable, Sendable, CustomStringConvertible {
    public var raw: UInt64
    public init(raw: UInt64) { self.raw = raw }
    public var description: String { "packet-fault#\(raw)" }
}

/// A request to the packet path's thread.
enum PacketPathCommand {
    case inject(PacketFault, length: Int64?, id: PacketFaultID)
    case lift(PacketFaultID)
    case liftAll
    case setLink(PacketLinkConfiguration)
}
#endif
