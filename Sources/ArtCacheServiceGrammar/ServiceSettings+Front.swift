import Foundation

extension ServiceSettings {
    /// `[service] front_url` as kept: "" stays "" (no front); otherwise an
    /// http or https URL of a host (a port and a path prefix allowed), with
    /// no user, query or fragment, without its trailing `/` (service paths
    /// start with one). nil when it is not such a URL.
    package static func frontURL(_ text: String) -> String? {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        guard !trimmed.isEmpty else { return "" }
        guard let components = URLComponents(string: trimmed), let scheme = components.scheme?.lowercased(),
              scheme == "http" || scheme == "https", let host = components.host, !host.isEmpty,
              components.user == nil, components.password == nil, components.query == nil, components.fragment == nil
        else { return nil }
        var url = trimmed
        while url.hasSuffix("/") { url.removeLast() }
        return url
    }

    /// The `Accept` headers a warm-up through the front sends, one per class
    /// the format policy answers apart (README "What browsers get"): AVIF
    /// and WebP (Chrome, Firefox, Safari 16+), WebP only (older Safari),
    /// neither. The scale-out front sends the nodes the same three.
    package static let warmUpAccepts = ["image/avif,image/webp,*/*", "image/webp,*/*", "*/*"]
}
