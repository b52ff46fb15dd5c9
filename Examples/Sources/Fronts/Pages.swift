import Foundation

/// Plain HTML for the four fronts (no templates: every value is escaped here).
enum Pages {
    static func escape(_ text: String) -> String {
        var out = ""
        out.reserveCapacity(text.count)
        for c in text {
            switch c {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&#39;"
            default: out.append(c)
            }
        }
        return out
    }

    struct Image {
        var src: String
        var srcset: String?
        var side: Int
    }

    static func page(title: String, form: String, notice: String?, rows: [(FrontRow, Image?)], empty: String) -> String {
        var html = """
            <!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>\(escape(title))</title>
            <style>body{font:15px system-ui,sans-serif;margin:24px;max-width:760px}nav a{margin-right:12px}
            ul{list-style:none;padding:0}li{display:flex;gap:12px;align-items:center;padding:6px 0;border-bottom:1px solid #eee}
            img{background:#ddd;border-radius:6px;flex:none}.t{font-weight:600}.s,.d{color:#555;font-size:13px}
            .notice{background:#fff4d6;padding:6px}</style></head><body>
            <nav><a href="/itunes?term=jack+johnson">iTunes</a><a href="/github/repos?q=swift">GitHub repos</a>
            <a href="/github/users?q=swift">GitHub users</a><a href="/twitter">Twitter</a></nav>
            <h1>\(escape(title))</h1>\(form)
            """
        if let notice { html += "<p class=\"notice\">\(escape(notice))</p>" }
        if rows.isEmpty {
            html += "<p class=\"empty\">\(escape(empty))</p>"
        } else {
            html += "<ul>"
            for (row, image) in rows {
                html += "<li>"
                if let image {
                    html += "<img src=\"\(escape(image.src))\" width=\"\(image.side)\" height=\"\(image.side)\" alt=\"\""
                    if let srcset = image.srcset { html += " srcset=\"\(escape(srcset))\"" }
                    html += ">"
                }
                html += "<div><div class=\"t\">\(escape(row.title))</div><div class=\"s\">\(escape(row.subtitle))</div>"
                html += "<div class=\"d\">\(escape(row.detail))</div></div></li>"
            }
            html += "</ul>"
        }
        return html + "</body></html>\n"
    }

    static func searchForm(action: String, name: String, value: String, extra: String = "") -> String {
        "<form action=\"\(action)\"><input name=\"\(name)\" value=\"\(escape(value))\" autofocus>\(extra)<button>Search</button></form>"
    }

    static func entitySelect(_ selected: String) -> String {
        let options = ["album", "song", "musicVideo"].map {
            "<option value=\"\($0)\"\($0 == selected ? " selected" : "")>\($0)</option>"
        }
        return "<select name=\"entity\">\(options.joined())</select>"
    }
}
