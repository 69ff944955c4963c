import NetsimCore
import NetsimLink

/// The relay's link: one for every connection, or one chosen per connection; a change reaches
/// open connections for every byte that arrives after it returns, and is one `link_changed`.
extension Relay {
    /// The link model in force for new bytes.
    public var link: LinkConfiguration { lock.withLock { currentLink } }

    /// The link connection `id` gets: the chooser's pick when one is set, otherwise ``link``.
    public func link(for id: ConnectionID) -> LinkConfiguration {
        lock.withLock { linkChooser?(id) ?? currentLink }
    }

    /// Lets each connection have its own link — Toxiproxy's `toxicity`, where a toxic applies to
    /// some connections only. The chooser is asked for every connection as it opens and, when
    /// set or changed, for every open one; it must be quick and give the same answer for the
    /// same id (decide from a seed). `nil` goes back to one ``link`` for all.
    public func setLinkChooser(_ chooser: (@Sendable (ConnectionID) -> LinkConfiguration)?) async {
        let open = lock.withLock {
            linkChooser = chooser
            return Array(pairs.values)
        }
        eventLog.record(.linkChanged(description: chooser == nil ? "one link for all connections: \(link)" : "a link chosen per connection"))
        await updateLinks(of: open)
    }

    /// One link for every connection, the per-connection chooser (if any) dropped, in one step
    /// and one `link_changed` — none when nothing changes (QA 67: `netsim serve` logged the old
    /// link, then the new one, on every toxic added, a link toxic or not).
    public func useOneLink(_ link: LinkConfiguration) async {
        let change = lock.withLock { () -> (open: [ConnectionPair], hadChooser: Bool)? in
            guard linkChooser != nil || currentLink != link else { return nil }
            defer {
                linkChooser = nil
                currentLink = link
            }
            return (Array(pairs.values), linkChooser != nil)
        }
        guard let change else { return }
        eventLog.record(.linkChanged(description: change.hadChooser ? "one link for all connections: \(link)" : link.description))
        await updateLinks(of: change.open)
    }

    /// Changes the link model; open connections use it for every byte that arrives after this
    /// returns.
    public func setLink(_ link: LinkConfiguration) async {
        let open = lock.withLock {
            currentLink = link
            return Array(pairs.values)
        }
        eventLog.record(.linkChanged(description: link.description))
        await updateLinks(of: open)
    }

    /// Gives each of `open` the link it gets now, on its own event loop.
    private func updateLinks(of open: [ConnectionPair]) async {
        for pair in open {
            let chosen = link(for: pair.id)
            try? await pair.eventLoop.submit { pair.update(link: chosen) }.get()
        }
    }
}
