import Foundation

/// What must still happen when `netsim run` or `netsim test` is interrupted (Ctrl-C, SIGTERM)
/// in the middle of a run: its pcap closed, so the capture so far is a whole file (it was cut at
/// the writer's buffer, 8 KiB, and unreadable), and its exec client told to stop (SIGTERM; one
/// that reads no stdin outlived netsim), its packet link's namespace and resolver files deleted
/// (they waited for the next run's sweep). Parts register while they run, from the moment the
/// resource exists, and unregister when they stop normally; the command's signal handler runs
/// what is left, once, then exits. In NetsimCore so that every module that makes such a resource
/// can register it.
public enum InterruptCleanup {
    /// What an action undoes, for the line that says what the interruption did.
    public enum Kind: Int, Sendable, CaseIterable {
        /// A scenario run under way: nothing to undo, counted for the message.
        case run
        /// A run's relay, stopped before its capture closes: the connections' closes are in the
        /// event log and the capture.
        case relay
        case execClient, capture, namespace, resolverFiles

        /// `count` of them, done: "2 exec clients sent SIGTERM (SIGKILL 1 s later)".
        public func done(_ count: Int) -> String {
            let many = count > 1
            return switch self {
            case .run: "\(count) run\(many ? "s" : "") stopped"
            case .relay: "\(count) relay\(many ? "s" : "") closed \(many ? "their" : "its") connections"
            case .execClient: "\(count) exec client\(many ? "s" : "") sent SIGTERM (SIGKILL 1 s later)"
            case .capture: "\(count) capture\(many ? "s" : "") closed"
            case .namespace: "\(count) packet link namespace\(many ? "s" : "") deleted"
            case .resolverFiles: "\(count) namespace resolver folder\(many ? "s" : "") removed"
            }
        }
    }

    private static let actions = LockedBox<(next: UInt64, pending: [UInt64: (kind: Kind, run: @Sendable () -> Void)])>((0, [:]))

    /// Registers `action`, which undoes a resource of `kind`; returns the key that
    /// ``unregister(_:)`` takes.
    public static func register(_ kind: Kind, _ action: @escaping @Sendable () -> Void) -> UInt64 {
        actions.withLock {
            $0.next += 1
            $0.pending[$0.next] = (kind, action)
            return $0.next
        }
    }

    public static func unregister(_ key: UInt64) {
        _ = actions.withLock { $0.pending.removeValue(forKey: key) }
    }

    /// Held while a resource is made through ``create(_:undo:_:)``, and by ``runAll()`` for good:
    /// an interruption waits for a making under way (and then undoes it), and nothing is made
    /// after it began (the maker blocks until the process exits). Recursive, so a making may
    /// make another on its thread.
    private static let making = NSRecursiveLock()

    /// Makes a resource that must not outlive an interrupted command (a namespace, files under
    /// /etc): registers `undo`, then runs `make`; returns what `make` returned and the key to
    /// ``unregister(_:)`` once the resource is gone. An interruption never falls between the
    /// making and the registration: one that comes while `make` runs waits for it and then
    /// undoes it; after one has begun, this never returns (the process is exiting).
    public static func create<Made>(_ kind: Kind, undo: @escaping @Sendable () -> Void,
                                    _ make: () throws -> Made) throws -> (made: Made, key: UInt64) {
        making.lock()
        defer { making.unlock() }
        let key = register(kind, undo)
        do {
            return (try make(), key)
        } catch {
            unregister(key)
            throw error
        }
    }

    /// Runs every registered action, newest first, and forgets them; returns how many of each
    /// kind ran (kinds none of which ran are left out).
    /// Waits for a ``create(_:undo:_:)`` under way and keeps any later one from starting: call it
    /// only when the process is about to exit.
    @discardableResult
    public static func runAll() -> [Kind: Int] {
        making.lock()  // never unlocked: the process exits next
        let pending = actions.withLock { state in
            defer { state.pending = [:] }
            return state.pending.sorted { $0.key > $1.key }.map(\.value)
        }
        var done: [Kind: Int] = [:]
        for action in pending {
            action.run()
            done[action.kind, default: 0] += 1
        }
        return done
    }

    /// What ``runAll()`` did, as a list in ``Kind``'s order: "1 run stopped, 1 exec client sent
    /// SIGTERM (SIGKILL 1 s later), 1 capture closed"; nil when it did nothing.
    public static func describe(_ done: [Kind: Int]) -> String? {
        let parts = Kind.allCases.compactMap { kind in done[kind].map(kind.done) }
        return parts.isEmpty ? nil : parts.joined(separator: ", ")
    }
}
