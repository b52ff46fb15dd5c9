import Foundation
import Mustache

/// The fronts' HTML: swift-mustache templates (escaping is the template
/// engine's: `{{value}}` is HTML-escaped), rendered from plain values.
enum Pages {
    /// One `<img>`: its 1× source and 2× `srcset`, its box (CSS pixels), and
    /// what the box shows until the image arrives (the manifest's
    /// placeholder: ThumbHash image over the dominant colour).
    struct Image {
        /// The image URL as the API gives it (`data-src`, for checks).
        var url: String = ""
        var src: String
        var srcset: String?
        var side: Int
        /// `cached`, `pending` or `failed` (the manifest's status).
        var status: String = "pending"
        var color: String?
        var placeholder: String?

        /// The inline style of the box: its placeholder as the background.
        var style: String {
            var parts: [String] = []
            if let color { parts.append("background-color:\(color)") }
            if let placeholder { parts.append("background-image:url('\(placeholder)')") }
            return parts.joined(separator: ";")
        }
    }

    /// The search form of a page.
    struct Form {
        var action: String
        var name: String
        var value: String
        /// The iTunes entity choice (empty: none).
        var entities: [Option] = []

        struct Option {
            var value: String
            var selected: Bool
        }
    }

    struct RowContext {
        var title: String
        var subtitle: String
        var detail: String
        var image: [ImageContext]
    }

    struct ImageContext {
        var url: String
        var src: String
        var srcset: String
        var side: Int
        var status: String
        var style: String
    }

    struct PageContext {
        var title: String
        var form: [Form]
        var hasEntities: Bool
        var notice: [String]
        var rows: [RowContext]
        var hasRows: Bool
        var empty: String
    }

    static let library: MustacheLibrary = {
        var library = MustacheLibrary()
        do {
            try library.register(Templates.page, named: "page")
        } catch {
            fatalError("the page template does not parse: \(error)")  // a constant in this file's module: the tests render it
        }
        return library
    }()

    static func page(title: String, form: Form?, notice: String?, rows: [(FrontRow, Image?)], empty: String) -> String {
        let context = PageContext(
            title: title, form: form.map { [$0] } ?? [], hasEntities: !(form?.entities.isEmpty ?? true),
            notice: notice.map { [$0] } ?? [],
            rows: rows.map { row, image in
                RowContext(title: row.title, subtitle: row.subtitle, detail: row.detail,
                           image: image.map { [ImageContext(url: $0.url, src: $0.src, srcset: $0.srcset ?? "", side: $0.side,
                                                            status: $0.status, style: $0.style)] } ?? [])
            },
            hasRows: !rows.isEmpty, empty: empty)
        return library.render(context, withTemplate: "page") ?? ""
    }

    static func searchForm(action: String, name: String, value: String) -> Form {
        Form(action: action, name: name, value: value)
    }

    static func entityForm(term: String, selected: String) -> Form {
        Form(action: "/itunes", name: "term", value: term,
             entities: ["album", "song", "musicVideo"].map { Form.Option(value: $0, selected: $0 == selected) })
    }
}
