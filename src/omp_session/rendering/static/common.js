/* omp-session viewer: what every page does, the viewer's and the export's. The first part of every
 * script the viewer serves (viewer.js) and the export inlines (rendering/page.py, JOINED_SCRIPTS).
 *
 * Times are shown in the reader's time zone; the keys j/k, [/], / and t move around (issue 13 #5);
 * the term of the search that brought the reader to a session is marked (issue 13 #4). Shared with
 * windowed.js through window.ompLocalTimes, window.ompStep and
 * window.ompMarkSearchTerm. Text is only ever set with textContent.
 */
(function () {
  "use strict";
  document.documentElement.classList.add("js");

  /* Times are written in UTC; show them in the reader's zone, with the UTC time on hover. */
  function localTimes(root) {
    (root || document).querySelectorAll("time[datetime]").forEach(function (el) {
      var iso = el.getAttribute("datetime");
      var moment = new Date(iso);
      if (!iso || isNaN(moment.getTime())) return;
      var pad = function (n) { return (n < 10 ? "0" : "") + n; };
      var clock = pad(moment.getHours()) + ":" + pad(moment.getMinutes()) + ":" + pad(moment.getSeconds());
      var day = moment.getFullYear() + "-" + pad(moment.getMonth() + 1) + "-" + pad(moment.getDate());
      el.textContent = el.getAttribute("data-format") === "date" ? day + " " + clock.slice(0, 5) : clock;
      el.title = "UTC " + moment.toISOString().replace("T", " ").replace(/\.\d+Z$/, "") + " · local " + day + " " + clock;
      el.classList.add("local");
    });
  }

  window.ompLocalTimes = localTimes; /* used by windowed.js for what it shows */

  /* Keyboard: j/k next/previous entry, ]/[ next/previous user prompt, / search, t tree (issue 13 #5). */
  var cursor = null;
  function visibleEntries(selector) {
    return Array.prototype.filter.call(
      document.querySelectorAll("#transcript " + selector),
      function (el) { return !el.closest("details.compacted:not([open])"); }
    );
  }
  /* Moves the cursor to the next/previous match; false when there is none past it (the windowed
     view then loads the next window and tries again). */
  function step(selector, direction) {
    var list = visibleEntries(selector);
    if (!list.length) return false;
    var before = cursor && document.contains(cursor) ? cursor : null;
    var index = -1;
    if (cursor && document.contains(cursor)) {
      var all = visibleEntries(".entry");
      var at = all.indexOf(cursor);
      /* the next/previous match relative to the cursor, even when the cursor is another kind */
      for (var i = 0; i < list.length; i++) {
        var position = all.indexOf(list[i]);
        if (direction > 0 && position > at) { index = i; break; }
        if (direction < 0 && position < at) index = i;
      }
      if (index < 0) index = direction > 0 ? list.length - 1 : 0;
    } else {
      index = direction > 0 ? 0 : list.length - 1;
    }
    if (cursor) cursor.classList.remove("cursor");
    cursor = list[index];
    cursor.classList.add("cursor");
    cursor.scrollIntoView({ block: "start" });
    return cursor !== before;
  }
  window.ompStep = step; /* used by windowed.js across window boundaries */
  function onKey(event) {
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    var target = event.target;
    var typing = target && (target.tagName === "INPUT" || target.tagName === "TEXTAREA" || target.isContentEditable);
    if (typing) {
      if (event.key === "Escape") target.blur();
      return;
    }
    var search = document.getElementById("site-search") || document.querySelector(".search input[name=q]");
    var filter = document.getElementById("tree-filter");
    switch (event.key) {
      case "j": step(".entry", 1); break;
      case "k": step(".entry", -1); break;
      case "]": step(".entry.k-user", 1); break;
      case "[": step(".entry.k-user", -1); break;
      case "/": if (search) search.focus(); else return; break;
      case "t":
        if (!filter) return;
        filter.focus();
        var selectedRow = document.querySelector(".tree .row.sel");
        if (selectedRow) selectedRow.scrollIntoView({ block: "center" });
        break;
      case "?": var help = document.getElementById("keys-help"); if (help) help.hidden = !help.hidden; break;
      default: return;
    }
    event.preventDefault();
  }

  /* The search term of the link that brought the reader here (?q=…), marked in the target entry
     (issue 13 #4): collapsed blocks holding it are opened, and the first mark is scrolled to. */
  function searchTerm() {
    var match = /[?&]q=([^&#]*)/.exec(location.search);
    if (!match) return "";
    try { return decodeURIComponent(match[1].replace(/\+/g, " ")).trim(); } catch (e) { return ""; }
  }

  function markTerm(root, term) {
    var needle = term.toLowerCase().replace(/\s+/g, " ");
    var walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
    var hits = [];
    var node;
    while ((node = walker.nextNode())) {
      if (node.parentNode && node.parentNode.closest && node.parentNode.closest("mark.found")) continue;
      if (node.nodeValue.toLowerCase().indexOf(needle) >= 0) hits.push(node);
    }
    var marks = [];
    hits.forEach(function (text) {
      var value = text.nodeValue;
      var lower = value.toLowerCase();
      var at = lower.indexOf(needle);
      var fragment = document.createDocumentFragment();
      var from = 0;
      while (at >= 0) {
        fragment.appendChild(document.createTextNode(value.slice(from, at)));
        var mark = document.createElement("mark");
        mark.className = "found";
        mark.textContent = value.slice(at, at + needle.length);
        fragment.appendChild(mark);
        marks.push(mark);
        from = at + needle.length;
        at = lower.indexOf(needle, from);
      }
      fragment.appendChild(document.createTextNode(value.slice(from)));
      text.parentNode.replaceChild(fragment, text);
    });
    marks.forEach(function (mark) {
      for (var up = mark.parentElement; up && up !== root.parentElement; up = up.parentElement) {
        if (up.tagName === "DETAILS") up.open = true;
      }
    });
    return marks;
  }

  /* Marks the search term of the link that brought the reader here in `root`; the marks. */
  window.ompMarkSearchTerm = function (root) {
    var term = searchTerm();
    return term ? markTerm(root, term) : [];
  };

  /* The entry a link or a search hit lands on (both pages): marked as the target, its search
     term marked, and the first mark (else the entry) scrolled to. */
  window.ompLand = function (el, block) {
    el.classList.add("target");
    var marks = window.ompMarkSearchTerm(el);
    (marks.length ? marks[0] : el).scrollIntoView({ block: block || "center" });
  };

  /* "Copy resume command" (issue 30 #4): omp's own way back into the session, on the clipboard;
     the button says what it copied (or shows the command to copy by hand). */
  function copyResume(button) {
    var command = button.getAttribute("data-command") || "";
    var done = function () { button.textContent = "Copied: " + command; };
    var by_hand = function () { button.textContent = command; };
    if (navigator.clipboard && navigator.clipboard.writeText) {
      navigator.clipboard.writeText(command).then(done, by_hand);
    } else {
      by_hand();
    }
  }

  function start() {
    document.addEventListener("keydown", onKey);
    document.querySelectorAll("button.copy-resume").forEach(function (button) {
      button.addEventListener("click", function () { copyResume(button); });
    });
    localTimes(document);
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
