/* omp-session HTML export (issue 13 #2): the viewer's window and row answers,
 * computed in the page from the data the file carries, so windowed.js runs unchanged from file://.
 *
 * The file holds, in <script type="application/json"> blocks: #export-meta (keys, parents, flags,
 * compactions, usage, the tree row of each entry), #export-rows-N (tree rows, rowChunk a block) and
 * #export-html-N (each entry's HTML, rendered and sanitised by omp-session, htmlChunk a block). A
 * block is JSON gzipped in base64 (data-encoding="gzip-base64"), inflated with DecompressionStream
 * the first time one of its entries is needed (the rows: all at once, at the start). The answers mirror
 * omp_session.rendering.windowed (window, rows_slice, rows_near, matching); keep them in step.
 * A search box searches the text of every entry and lists the hits; a hit opens its context.
 */
(function () {
  "use strict";
  var metaElement = document.getElementById("export-meta");
  if (!metaElement) return;
  var meta = JSON.parse(metaElement.textContent);
  var IN_CONTEXT = 1, COMPACTION = 2, RESET = 4, REMOTE = 8;
  /* the server's sizes (rendering.windowed.WINDOW, windowed_tree.ROWS and FILTER_LIMIT), from the file */
  var WINDOW = meta.window, ROWS = meta.rowsAtMost, FILTER_LIMIT = meta.filterLimit, SEARCH_LIMIT = 200;
  var position = new Map();
  meta.keys.forEach(function (key, i) { position.set(key, i); });
  var blocks = new Map();
  var loading = new Map();

  /* A block's value: plain JSON, or (data-encoding="gzip-base64") its JSON gzipped in base64,
     inflated by the browser's DecompressionStream. A promise either way. */
  function decode(element) {
    if (!element) return Promise.resolve([]);
    if (element.getAttribute("data-encoding") !== "gzip-base64") {
      return Promise.resolve(JSON.parse(element.textContent));
    }
    var text = atob(element.textContent.trim());
    var bytes = new Uint8Array(text.length);
    for (var i = 0; i < text.length; i++) bytes[i] = text.charCodeAt(i);
    var stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
    return new Response(stream).text().then(JSON.parse);
  }
  /* Load the blocks of `kind` numbered `indexes` (once each); resolves when all are in `blocks`. */
  function need(kind, indexes) {
    return Promise.all(indexes.map(function (index) {
      var id = "export-" + kind + "-" + index;
      if (blocks.has(id)) return null;
      if (!loading.has(id)) {
        loading.set(id, decode(document.getElementById(id)).then(function (value) { blocks.set(id, value); }));
      }
      return loading.get(id);
    }));
  }
  function blocksOf(count, chunk) {
    var out = [];
    for (var i = 0; i * chunk < count; i++) out.push(i);
    return out;
  }
  function htmlBlocks(positions) {
    var seen = new Set();
    positions.forEach(function (p) { seen.add(Math.floor(p / meta.htmlChunk)); });
    return Array.from(seen);
  }
  /* The tree rows are small (a few MB for 50,000 entries): all are inflated once, up front. */
  var rowsReady = need("rows", blocksOf(meta.rowCount, meta.rowChunk));

  /* A block already loaded by need(). */
  function block(kind, index) {
    var id = "export-" + kind + "-" + index;
    return blocks.has(id) ? blocks.get(id) : [];
  }
  function entryHtml(p) { return block("html", Math.floor(p / meta.htmlChunk))[p % meta.htmlChunk] || ""; }
  function row(index) { return block("rows", Math.floor(index / meta.rowChunk))[index % meta.rowChunk]; }
  function idOf(p) { return Object.prototype.hasOwnProperty.call(meta.ids, p) ? meta.ids[p] : meta.keys[p]; }

  function pathTo(key) {
    var out = [];
    var seen = new Set();
    var current = position.has(key) ? position.get(key) : -1;
    while (current >= 0 && !seen.has(current)) {
      seen.add(current);
      out.push(current);
      current = meta.parents[current];
    }
    return out.reverse();
  }

  /* WindowedSession.arrange: only the last compaction on the path counts; /clear after it resets. */
  function arrange(path) {
    var at = -1, reset = -1;
    for (var i = path.length - 1; i >= 0; i--) {
      var flags = meta.flags[path[i]];
      if (flags & COMPACTION) { at = i; break; }
      if (flags & RESET && reset < 0) reset = i;
    }
    if (reset >= 0) return { dropped: path.slice(0, reset), summary: null, rest: path.slice(reset) };
    if (at < 0) return { dropped: [], summary: null, rest: path.slice() };
    var before = path.slice(0, at);
    var kept = meta.kept[path[at]];
    var start = -1;
    if (!(meta.flags[path[at]] & REMOTE) && typeof kept === "string") {
      start = before.findIndex(function (p) { return idOf(p) === kept; });
    }
    return {
      dropped: start >= 0 ? before.slice(0, start) : before,
      summary: path[at],
      rest: (start >= 0 ? before.slice(start) : []).concat(path.slice(at + 1))
    };
  }

  function bounds(keys, total, q, summaryFirst) {
    var count = WINDOW, found, first, last;
    if (q.after !== null) {
      found = keys.indexOf(q.after);
      return [found >= 0 ? found + 1 : Math.max(total - count, 0), total];
    }
    if (q.start !== null) return [Math.max(q.start, 0), Math.min(Math.max(q.start, 0) + count, total)];
    if (q.end !== null) {
      last = Math.min(Math.max(q.end, 0), total);
      return [Math.max(last - count, 0), last];
    }
    if (q.around !== null) {
      found = keys.indexOf(q.around);
      var middle = found >= 0 ? found : total;
      first = Math.max(Math.min(middle - Math.floor(count / 2), total - count), 0);
      return [first, Math.min(first + count, total)];
    }
    if (summaryFirst) return [0, Math.min(count, total)];
    return [Math.max(total - count, 0), total];
  }

  function render(positions, classes) {
    return positions.map(function (p) {
      var html = entryHtml(p);
      var extra = classes(p);
      return extra ? html.replace('<article class="entry ', '<article class="entry ' + extra + " ") : html;
    }).join("");
  }

  /* rendering/format.py: format_tokens, format_cost, usage_line */
  /* n / unit to one decimal as Python's format does: both round the same double correctly, but on
     an exact tie (34250 / 1000 = 34.25) Python picks the even digit and toFixed the larger. */
  function tenths(n, unit) {
    if (Number.isInteger(n) && n % (unit / 10) === unit / 20 && n % (unit / 4) === 0) {
      var lower = Math.floor(n / (unit / 10));
      return ((lower % 2 === 0 ? lower : lower + 1) / 10).toFixed(1);
    }
    return (n / unit).toFixed(1);
  }
  function tokens(n) {
    if (!isFinite(n)) return n > 0 ? "∞" : "-∞";
    if (n < 1000) return String(Math.trunc(n));
    if (n < 1000000) return tenths(n, 1000) + "k";
    return tenths(n, 1000000) + "M";
  }
  function cost(c) {
    if (c <= 0) return "$0";
    return "$" + (c >= 0.1 ? c.toFixed(2) : c.toFixed(4));
  }
  function usageLine(path) {
    var sum = [0, 0, 0, 0, 0, 0];
    path.forEach(function (p) {
      var own = meta.usage[p];
      if (own) for (var i = 0; i < 6; i++) sum[i] += own[i];
    });
    if (sum.every(function (value) { return value === 0; })) return "";
    var parts = ["in " + tokens(sum[0]), "out " + tokens(sum[1])];
    if (sum[2] || sum[3]) parts.push("cache " + tokens(sum[2]) + "/" + tokens(sum[3]));
    parts.push(cost(sum[5]));
    return parts.join(" · ");
  }

  function ranges(indexes) {
    var runs = [];
    indexes.forEach(function (index) {
      if (runs.length && index === runs[runs.length - 1][1] + 1) runs[runs.length - 1][1] = index;
      else runs.push([index, index]);
    });
    return runs;
  }

  function treeFacts(key, path, shown) {
    var index = meta.rowOf[position.get(key)];
    return {
      keyRows: (shown || []).map(function (k) {
        var row = position.has(k) ? meta.rowOf[position.get(k)] : -1;
        return row >= 0 ? row : null;
      }),
      where: index >= 0 ? row(index)[3] : key,
      usage: usageLine(path),
      pathRows: ranges(path.map(function (p) { return meta.rowOf[p]; })
        .filter(function (i) { return i >= 0; }).sort(function (a, b) { return a - b; })),
      row: index >= 0 ? index : null,
      rows: meta.rowCount
    };
  }

  /* For deep links and hits: `shown` (the node whose context the page shows) when its path holds
     `key`, else the leaf when its path does, else the newest tip below `key` (newest_leaf_under). */
  function newestLeafUnder(key, shown) {
    if (shown && position.has(shown) && pathTo(shown).indexOf(position.get(key)) >= 0) return shown;
    if (meta.leaf !== null && pathTo(meta.leaf).indexOf(position.get(key)) >= 0) return meta.leaf;
    var index = meta.rowOf[position.get(key)];
    if (index === undefined || index < 0) return key;
    var tip = key, end = row(index)[6];
    for (var i = index + 1; i < end; i++) if (row(i)[5] & 4) tip = row(i)[0];
    return tip;
  }

  /* The window's answer, once the blocks holding its entries are loaded (a promise). */
  function window_(q) {
    var key = q.at !== null && position.has(q.at) ? q.at : meta.leaf;
    if (key === null) {
      return Promise.resolve({ at: null, total: 0, start: 0, end: 0, html: "", summary: "", keys: [] });
    }
    var path = pathTo(key);
    var parts = arrange(path);
    var rest = q.dropped ? parts.dropped : parts.rest;
    var keys = rest.map(function (p) { return meta.keys[p]; });
    var summaryFirst = !q.dropped && parts.summary !== null && meta.keys[parts.summary] === key;
    var span = bounds(keys, rest.length, q, summaryFirst);
    var shown = rest.slice(span[0], span[1]);
    var wanted = parts.summary !== null ? shown.concat([parts.summary]) : shown;
    return need("html", htmlBlocks(wanted)).then(function () {
      return windowReply(q, key, path, parts, rest, keys, span, shown);
    });
  }

  function windowReply(q, key, path, parts, rest, keys, span, shown) {
    var html = render(shown, function (p) {
      return q.dropped ? "dropped" : (meta.flags[p] & IN_CONTEXT ? "ctx" : "");
    });
    var summary = parts.summary !== null && span[0] === 0 && !q.dropped
      ? render([parts.summary], function () { return "ctx active-compaction"; }) : "";
    var sent = (parts.summary !== null ? 1 : 0) +
      parts.rest.filter(function (p) { return meta.flags[p] & IN_CONTEXT; }).length;
    var reply = {
      at: key, leaf: meta.leaf, total: rest.length, start: span[0], end: span[1],
      dropped: parts.dropped.length, cleared: parts.summary === null && parts.dropped.length > 0,
      summary: summary, html: html, keys: keys.slice(span[0], span[1]), sent: sent, pathLength: path.length
    };
    return Object.assign(reply, treeFacts(key, path, reply.keys));
  }

  function slice(start, count) {
    var out = [];
    var first = Math.max(start, 0);
    for (var i = first; i < Math.min(first + Math.min(count, ROWS * 5), meta.rowCount); i++) out.push(row(i));
    return out;
  }

  function matching(query) {
    var needle = query.trim().toLowerCase();
    var hits = [], total = 0;
    for (var i = 0; i < meta.rowCount; i++) {
      var r = row(i);
      if (r[3].toLowerCase().indexOf(needle) >= 0 || (r[4] && r[4].toLowerCase().indexOf(needle) >= 0)) {
        total++;
        if (hits.length < FILTER_LIMIT) hits.push([i, r]);
      }
    }
    return { query: query, total: total, rows: hits };
  }

  function number(params, name) {
    var value = params.get(name);
    return value === null || value === "" || isNaN(parseInt(value, 10)) ? null : parseInt(value, 10);
  }

  /* The answer windowed.js would get from the server for `url` ("window?…" or "rows?…"). */
  window.ompLocalApi = function (url) {
    var query = url.indexOf("?") >= 0 ? url.slice(url.indexOf("?") + 1) : "";
    var params = new URLSearchParams(query);
    return rowsReady.then(function () { return new Promise(function (resolve) {
      if (url.indexOf("rows") === 0) {
        if (params.has("near")) {
          var near = params.get("near");
          var at = near && position.has(near) ? near : meta.leaf;
          var facts = treeFacts(at, pathTo(at), params.getAll("keys"));
          var first = Math.max((facts.row || 0) - ROWS / 2, 0);
          resolve(Object.assign(facts, { at: at, start: first, rows: slice(first, ROWS), count: meta.rowCount }));
        } else if (params.has("q")) {
          resolve(matching(params.get("q") || ""));
        } else {
          resolve(slice(number(params, "start") || 0, number(params, "count") || ROWS));
        }
        return;
      }
      var target = params.get("target");
      resolve(window_({
        at: params.get("at") || (target ? newestLeafUnder(target, params.get("from")) : null),
        start: number(params, "start"), end: number(params, "end"),
        around: target, after: params.get("after"), dropped: params.get("dropped") === "1"
      }));
    }); });
  };

  /* -- search inside the file ------------------------------------------------------------------ */

  var texts = null;
  function entryText(p) {
    if (!texts) texts = new Array(meta.keys.length);
    if (texts[p] === undefined) {
      texts[p] = entryHtml(p).replace(/<[^>]*>/g, " ").replace(/&lt;/g, "<").replace(/&gt;/g, ">")
        .replace(/&quot;/g, "\"").replace(/&#39;/g, "'").replace(/&amp;/g, "&").replace(/\s+/g, " ");
    }
    return texts[p];
  }

  function search(query) {
    var needle = query.trim().toLowerCase();
    var hits = [], total = 0;
    if (!needle) return { hits: hits, total: 0 };
    for (var p = 0; p < meta.keys.length; p++) {
      var text = entryText(p);
      var at = text.toLowerCase().indexOf(needle);
      if (at < 0) continue;
      total++;
      if (hits.length < SEARCH_LIMIT) {
        hits.push([meta.keys[p], text.slice(Math.max(at - 60, 0), at + needle.length + 80)]);
      }
    }
    return { hits: hits, total: total };
  }

  function showHits(query) {
    need("html", blocksOf(meta.keys.length, meta.htmlChunk)).then(function () { listHits(query); });
  }

  function listHits(query) {
    var box = document.getElementById("export-hits");
    var found = search(query);
    box.replaceChildren();
    box.hidden = !query.trim();
    var close = document.createElement("button");
    close.type = "button";
    close.className = "close";
    close.title = "close the hits";
    close.textContent = "×";
    close.addEventListener("click", function () { box.hidden = true; });
    box.appendChild(close);
    var head = document.createElement("div");
    head.className = "dim";
    head.textContent = found.total + " entr" + (found.total === 1 ? "y holds" : "ies hold") + " “" + query.trim() + "”" +
      (found.total > found.hits.length ? " (first " + found.hits.length + " listed)" : "");
    box.appendChild(head);
    var list = document.createElement("ol");
    found.hits.forEach(function (hit) {
      var item = document.createElement("li");
      var link = document.createElement("a");
      link.href = "#" + encodeURIComponent(hit[0]);
      link.textContent = hit[1];
      item.appendChild(link);
      list.appendChild(item);
    });
    box.appendChild(list);
  }

  document.addEventListener("DOMContentLoaded", function () {
    var form = document.getElementById("export-search-form");
    if (!form) return;
    form.addEventListener("submit", function (event) {
      event.preventDefault();
      showHits(document.getElementById("site-search").value);
    });
  });
})();
