import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import NetsimAccept
import NetsimCore

/// How fast a replay answers.
public struct ReplayTiming: Sendable, Equatable {
    /// nil: answer at once. 1: the server's original think times and pacing. 2: twice as fast.
    public var speed: Double?

    public init(speed: Double?) { self.speed = speed }

    public static let immediate = ReplayTiming(speed: nil)
    public static let original = ReplayTiming(speed: 1)

    /// The range of speeds a replay takes (`--speed`): a thousand times slower to a thousand
    /// times faster.
    public static let speeds = 0.001...1000.0

    func scaled(_ nanoseconds: Int64) -> Int64 {
        guard let speed, speed > 0 else { return 0 }
        // Saturating: a library caller's speed below `speeds` still yields a finite wait.
        return Int64(min(Double(max(0, nanoseconds)) / speed, Double(Int64.max / 2)))
    }
}

/// A request a replay server received, and what it answered.
public struct ReplayedRequest: Sendable, Equatable {
    public var method: String
    public var target: String
    /// The captured exchange that answered it (flow number, index in the flow); nil: 404.
    public var flow: Int?
    public var exchange: Int?
    /// The captured status (404 when nothing matched, 0 when the capture has no answer).
    public var status: Int
    public var bodyBytes: Int
    /// 1, 2, … in accept order.
    public var connection: Int
    public var reusedConnection: Bool
    /// Monotonic nanoseconds (``SystemClock``).
    public var time: Int64
}

/// Serves the server side of captured conversations to real clients: the upstream for
/// `netsim replay` and for scenarios with `upstream: { replay: FILE }`.
// `@unchecked Sendable`: mutable state (listener, connections) is behind its lock.
public final class ReplayServer: @unchecked Sendable {
    public let plan: ReplayPlan
    public let timing: ReplayTiming
    private let listen: Endpoint
    private let group: any EventLoopGroup
    private let ownsGroup: Bool
    let book: ReplayBook
    private let lock = NIOLock()
    private var listener: (any Channel)?

    public init(plan: ReplayPlan, timing: ReplayTiming = .immediate, listen: Endpoint = Endpoint(host: "127.0.0.1", port: 0), group: (any EventLoopGroup)? = nil) {
        self.plan = plan
        self.timing = timing
        self.listen = listen
        self.book = ReplayBook(plan: plan)
        if let group {
            self.group = group
            ownsGroup = false
        } else {
            self.group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
            ownsGroup = true
        }
    }

    /// Starts listening; returns the bound address (with the real port for port 0).
    @discardableResult
    public func start() async throws -> Endpoint {
        let book = self.book
        let timing = self.timing
        let channel = try await ServerBootstrap(group: group)
            .serverChannelOption(ChannelOptions.backlog, value: 256)
            .serverChannelOption(ChannelOptions.socketOption(.so_reuseaddr), value: 1)
            .serverChannelInitializer { channel in  // out of descriptors, an accept waits 1 s, not spins
                channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(AcceptBackoff()) }
            }
            .childChannelOption(ChannelOptions.allowRemoteHalfClosure, value: true)
            .childChannelOption(ChannelOptions.tcpOption(.tcp_nodelay), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let handler = ReplayConnectionHandler(book: book, timing: timing, connection: book.opened(channel))
                    try channel.pipeline.syncOperations.addHandler(handler)
                }
            }
            .bind(host: listen.host, port: listen.port)
            .get()
        lock.withLock { listener = channel }
        return Endpoint(host: listen.host, port: channel.localAddress?.port ?? listen.port)
    }

    /// Every request received so far, in arrival order.
    public var requests: [ReplayedRequest] { book.served }

    /// Stops listening and closes every open connection.
    public func stop() async {
        let channel = lock.withLock { () -> (any Channel)? in
            defer { listener = nil }
            return listener
        }
        try? await channel?.close()
        for open in book.openChannels() { try? await open.close() }
        if ownsGroup { try? await group.shutdownGracefully() }
    }
}

/// The replay's shared state: which captured answer each (method, target) gets next, which raw
/// conversation the next connection plays, and the log of what was served.
// `@unchecked Sendable`: every `var` is reached only with `lock` held.
final class ReplayBook: @unchecked Sendable {
    let plan: ReplayPlan
    private let lock = NIOLock()
    private var byTarget: [String: [Int]] = [:]
    private var byPath: [String: [Int]] = [:]
    /// Exchanges whose request asked for a byte range, by method, target and `Range` value.
    private var byRange: [String: [Int]] = [:]
    private var cursors: [String: Int] = [:]
    private var nextRaw = 0
    private var log: [ReplayedRequest] = []
    private var connections = 0
    private var channels: [Int: any Channel] = [:]
    private let clock = SystemClock()

    init(plan: ReplayPlan) {
        self.plan = plan
        for (index, exchange) in plan.exchanges.enumerated() {
            byTarget["\(exchange.method) \(exchange.target)", default: []].append(index)
            byPath["\(exchange.method) \(Self.path(exchange.target))", default: []].append(index)
            if let range = HTTPFraming.head(exchange.request[...])?.field("Range") {
                byRange[Self.rangeKey(exchange.method, exchange.target, range), default: []].append(index)
            }
        }
    }

    static func rangeKey(_ method: String, _ target: String, _ range: String) -> String {
        "\(method) \(target) \(range.filter { !$0.isWhitespace }.lowercased())"
    }

    static func path(_ target: String) -> String { String(target.prefix { $0 != "?" }) }

    var hasHTTP: Bool { !plan.exchanges.isEmpty }
    var hasRaw: Bool { !plan.raw.isEmpty }

    /// The next captured answer for this request, in capture order, starting over at the end.
    /// A request for a byte range (`range`: its `Range` header) gets the answers captured for
    /// that range when there are any: a client resuming at another offset than the capture's
    /// next request got that request's bytes, at the wrong offset.
    func answer(method: String, target: String, range: String? = nil) -> CapturedExchange? {
        lock.withLock {
            var key = "T \(method) \(target)"
            var candidates = byTarget["\(method) \(target)"]
            if let range, let ranged = byRange[Self.rangeKey(method, target, range)] {
                key = "R " + Self.rangeKey(method, target, range)
                candidates = ranged
            }
            if candidates == nil {
                key = "P \(method) \(Self.path(target))"
                candidates = byPath["\(method) \(Self.path(target))"]
            }
            guard let candidates, !candidates.isEmpty else { return nil }
            let cursor = cursors[key, default: 0]
            cursors[key] = cursor + 1
            return plan.exchanges[candidates[cursor % candidates.count]]
        }
    }

    /// The raw conversation the next connection plays (in capture order, starting over).
    func nextRawConversation() -> ReplayPlan.RawConversation? {
        lock.withLock {
            guard !plan.raw.isEmpty else { return nil }
            defer { nextRaw += 1 }
            return plan.raw[nextRaw % plan.raw.count]
        }
    }

    func record(_ method: String, _ target: String, exchange: CapturedExchange?, bodyBytes: Int, connection: Int, reused: Bool) {
        let request = ReplayedRequest(
            method: method, target: target, flow: exchange?.flow, exchange: exchange?.index,
            status: exchange.map { $0.status ?? 0 } ?? 404, bodyBytes: bodyBytes, connection: connection,
            reusedConnection: reused, time: clock.now())
        lock.withLock { log.append(request) }
    }

    var served: [ReplayedRequest] { lock.withLock { log } }

    func opened(_ channel: any Channel) -> Int {
        lock.withLock {
            connections += 1
            channels[connections] = channel
            return connections
        }
    }

    func closed(_ connection: Int) { lock.withLock { _ = channels.removeValue(forKey: connection) } }

    func openChannels() -> [any Channel] { lock.withLock { Array(channels.values) } }
}
