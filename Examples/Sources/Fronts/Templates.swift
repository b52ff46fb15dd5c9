/// The fronts' mustache templates. Every box has its size (`width`/`height`)
/// before the image arrives, and its placeholder as its background: no
/// layout shift, no grey box for what the cache has seen.
enum Templates {
    static let page = """
        <!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{{title}}</title>
        <style>body{font:15px system-ui,sans-serif;margin:24px;max-width:760px;background:#fff}nav a{margin-right:12px}
        ul{list-style:none;padding:0}li{display:flex;gap:12px;align-items:center;padding:6px 0;border-bottom:1px solid #eee}
        img{background-color:#ddd;background-size:cover;background-repeat:no-repeat;border-radius:6px;flex:none;object-fit:cover}
        .t{font-weight:600}.s,.d{color:#555;font-size:13px}.notice{background:#fff4d6;padding:6px}</style></head><body>
        <nav><a href="/itunes?term=jack+johnson">iTunes</a><a href="/github/repos?q=swift">GitHub repos</a>
        <a href="/github/users?q=swift">GitHub users</a><a href="/twitter">Twitter</a></nav>
        <h1>{{title}}</h1>
        {{#form}}<form action="{{action}}"><input name="{{name}}" value="{{value}}" autofocus>{{#hasEntities}}<select name="entity">{{#entities}}<option value="{{value}}"{{#selected}} selected{{/selected}}>{{value}}</option>{{/entities}}</select>{{/hasEntities}}<button>Search</button></form>{{/form}}
        {{#notice}}<p class="notice">{{.}}</p>{{/notice}}
        {{#hasRows}}<ul>
        {{#rows}}<li>{{#image}}<img src="{{src}}" srcset="{{srcset}}" width="{{side}}" height="{{side}}" alt="" data-src="{{url}}" data-status="{{status}}" style="{{style}}">{{/image}}<div><div class="t">{{title}}</div><div class="s">{{subtitle}}</div><div class="d">{{detail}}</div></div></li>
        {{/rows}}</ul>{{/hasRows}}
        {{^hasRows}}<p class="empty">{{empty}}</p>{{/hasRows}}
        </body></html>

        """
}
