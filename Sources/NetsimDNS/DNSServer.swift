import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import NetsimAccept
import NetsimCore

/// netsim's DNS server: answers from a ``DNSZone`` on UDP and TCP port 53 (RFC 1035 §4.2) of one
/// address, recording every query and every answer (or silence) in an ``EventLog``.
///
/// `netsim shell` binds it to NETSIM_HOST on the host side, so queries from the namespace cross
/// the impaired link both ways like any packet (a lost query is lost, and the client's resolver
/// retries as it would), and ``DNSZone/faults`` add the resolver's own delay and failures.
/// Answers too big for 512 bytes go out over UDP with TC set; the TCP listener answers the
/// retry (netsim's own answers are small, so this is for completeness).
public final class DNSServer: @unchecked Sendable {
    public let zone: DNSZone
    public let eventLog: EventLog
    private let group: MultiThreadedEventLoopGroup
    private var channels: [any Channel] = []
    private let tally = NIOLockedValueBox(DNSCounters())
    /// Answers scheduled and not yet sent (the delay holds them).
    private let waiting = NIOLockedValueBox(0)
    /// Past this many answers waiting out the delay, new queries go unanswered (bounded memory
    /// under a query flood; the client's resolver retries as after a loss).
    public let maximumWaiting: Int
    /// A TCP connection that sends nothing for this long is closed (bounded resources).
    static let tcpIdleTimeout = TimeAmount.seconds(10)

    public init(zone: DNSZone, eventLog: EventLog, maximumWaiting: Int = 10_000) {
        self.maximumWaiting = maximumWaiting
        self.zone = zone
        self.eventLog = eventLog
        group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
    }

    /// Binds UDP and TCP on `host`:`port`; port 0 picks a port free for both (a few tries: the
    /// UDP port's number may be taken for TCP). Returns the port.
    @discardableResult
    public func start(host: String, port: Int = 53) throws -> Int {
        var attempt = 0
        while true {
            attempt += 1
            do {
                return try bind(host: host, port: port)
            } catch let error as IOError where error.errnoCode == EADDRINUSE && port == 0 && attempt < 5 {
                closeChannels()
            } catch {
                stop()
                throw error
            }
        }
    }

    private func bind(host: String, port: Int) throws -> Int {
        // No SO_REUSEADDR on UDP: on Linux it would let a second server share the port.
        let udp = try DatagramBootstrap(group: group)
            .channelInitializer { [self] channel in
                channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(DNSDatagramHandler(server: self)) }
            }
            .bind(host: host, port: port).wait()
        channels.append(udp)
        let bound = udp.localAddress?.port ?? port
        let tcp = try ServerBootstrap(group: group)
            .serverChannelOption(ChannelOptions.socketOption(.so_reuseaddr), value: 1)
            .serverChannelInitializer { channel in  // out of descriptors, an accept waits 1 s, not spins
                channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(AcceptBackoff()) }
            }
            .childChannelInitializer { [self] channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandlers([
                        IdleStateHandler(readTimeout: Self.tcpIdleTimeout),
                        ByteToMessageHandler(DNSStreamFrameDecoder()),
                        DNSStreamHandler(server: self),
                    ])
                }
            }
            .bind(host: host, port: bound).wait()
        channels.append(tcp)
        return bound
    }

    private func closeChannels() {
        for channel in channels { try? channel.close().wait() }
        channels = []
    }

    /// What the server has done so far.
    public var counters: DNSCounters { tally.withLockedValue { $0 } }

    public func stop() {
        closeChannels()
        try? group.syncShutdownGracefully()
    }

    /// Decides the answer to `bytes`, logs the query, and calls `send` with the answer's bytes
    /// once the zone's delay has passed (never, for silence). `udp` picks the size limit.
    func handle(_ bytes: [UInt8], udp: Bool, on eventLoop: any EventLoop, send: @escaping @Sendable ([UInt8]) -> Void) {
        let start = eventLog.clock.now()
        let transport = udp ? "udp" : "tcp"
        var decision: DNSZone.Decision
        let question: (name: String, type: String)
        do {
            let query = try DNSMessage(decoding: bytes)
            decision = zone.decide(query)
            question = query.questions.first.map { ($0.name, $0.type.description) } ?? ("", "-")
        } catch {
            // RFC 1035 §4.1.1: FORMERR to a query whose header could be read; else nothing.
            let header = DNSMessage.headerOnly(bytes).flatMap { $0.isResponse ? nil : $0 }
            decision = DNSZone.Decision(response: header?.response(rcode: .formatError), result: "FORMERR (malformed: \(error))", delay: .zero)
            question = ("?", "?")
        }
        eventLog.record(.dnsQuery(name: question.name, type: question.type, transport: transport))
        if decision.delay > .zero, !reserveWaitingSlot() {
            decision = DNSZone.Decision(response: nil, result: "dropped (\(maximumWaiting) answers already waiting out the delay)", delay: .zero)
        }
        let log = eventLog
        let result = decision.result
        let answer = decision.response.map { udp ? $0.fittingUDP() : $0.encoded() }
        let truncated = udp && answer != nil && answer != decision.response?.encoded()
        tally.withLockedValue {
            $0.queries += 1
            $0.count(decision.response, truncated: truncated)
        }
        // Recorded before the answer goes out: whoever reads the answer finds it in the log.
        let finish: @Sendable () -> Void = {
            log.record(.dnsAnswer(name: question.name, type: question.type, result: result, after: log.clock.now() - start))
            if let answer { send(answer) }
        }
        if decision.delay <= .zero {
            finish()
        } else {
            let waiting = self.waiting
            eventLoop.scheduleTask(in: .nanoseconds(decision.delay.nanoseconds)) {
                waiting.withLockedValue { $0 -= 1 }
                finish()
            }
        }
    }
}

extension DNSServer {
    /// Counts one more answer waiting out the delay; false when ``maximumWaiting`` are.
    private func reserveWaitingSlot() -> Bool {
        waiting.withLockedValue { count in
            guard count < maximumWaiting else { return false }
            count += 1
            return true
        }
    }
}

/// One datagram, one query: the answer goes back to the datagram's sender.
final class DNSDatagramHandler: ChannelInboundHandler, Sendable {
    typealias InboundIn = AddressedEnvelope<ByteBuffer>
    typealias OutboundOut = AddressedEnvelope<ByteBuffer>
    private let server: DNSServer

    init(server: DNSServer) { self.server = server }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let envelope = unwrapInboundIn(data)
        let channel = context.channel
        let remote = envelope.remoteAddress
        server.handle(Array(envelope.data.readableBytesView), udp: true, on: context.eventLoop) { answer in
            channel.writeAndFlush(AddressedEnvelope(remoteAddress: remote, data: channel.allocator.buffer(bytes: answer)), promise: nil)
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // An ICMP error for one client's datagram (it went away) must not close the server.
    }
}

/// DNS over TCP frames each message with a two-byte length (RFC 1035 §4.2.2).
struct DNSStreamFrameDecoder: ByteToMessageDecoder {
    typealias InboundOut = ByteBuffer

    mutating func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws -> DecodingState {
        guard let length = buffer.getInteger(at: buffer.readerIndex, as: UInt16.self),
              buffer.readableBytes >= 2 + Int(length) else { return .needMoreData }
        buffer.moveReaderIndex(forwardBy: 2)
        context.fireChannelRead(wrapInboundOut(buffer.readSlice(length: Int(length))!))
        return .continue
    }
}

/// Answers each framed query on its connection (several may be in flight: RFC 7766 §6.2.1).
final class DNSStreamHandler: ChannelInboundHandler, Sendable {
    typealias InboundIn = ByteBuffer
    private let server: DNSServer

    init(server: DNSServer) { self.server = server }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let channel = context.channel
        server.handle(Array(unwrapInboundIn(data).readableBytesView), udp: false, on: context.eventLoop) { answer in
            var buffer = channel.allocator.buffer(capacity: answer.count + 2)
            buffer.writeInteger(UInt16(answer.count))
            buffer.writeBytes(answer)
            channel.writeAndFlush(buffer, promise: nil)
        }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if event is IdleStateHandler.IdleStateEvent { context.close(promise: nil) } else { context.fireUserInboundEventTriggered(event) }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}
