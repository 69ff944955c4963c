/// Levenshtein distance between two words, ignoring case.
func editDistance(_ a: String, _ b: String) -> Int {
    let x = Array(a.lowercased().unicodeScalars)
    let y = Array(b.lowercased().unicodeScalars)
    if x.isEmpty { return y.count }
    if y.isEmpty { return x.count }
    var previous = Array(0...y.count)
    var current = [Int](repeating: 0, count: y.count + 1)
    for i in 1...x.count {
        current[0] = i
        for j in 1...y.count {
            let substitution = previous[j - 1] + (x[i - 1] == y[j - 1] ? 0 : 1)
            current[j] = min(previous[j] + 1, current[j - 1] + 1, substitution)
        }
        swap(&previous, &current)
    }
    return previous[y.count]
}

/// The candidate closest to `word` within an edit distance of 2 (the first one on a tie), or
/// nil. A word of one or two letters only matches within distance 1, so that `ab` does not
/// suggest every two-letter key.
func closestMatch(to word: String, among candidates: [String]) -> String? {
    let limit = word.count <= 2 ? 1 : 2
    var best: (candidate: String, distance: Int)?
    for candidate in candidates where candidate != word {
        let distance = editDistance(word, candidate)
        guard distance <= limit else { continue }
        if best == nil || distance < best!.distance { best = (candidate, distance) }
    }
    return best?.candidate
}
