/* The span-marking (NER, SQuAD) widget: the behaviour of data-widget="spans" (templates/worker/_widget_spans.html).
 *
 * Offsets: the server renders every token's start/end (Python code points) into data-s/data-e; this script
 * only ever sends those numbers back, never JavaScript string indices (UTF-16). Dataset text is only read with
 * textContent / Range.toString and written with textContent.
 *
 * Registered with work.js (window.CluesWork.widget), which sets it up on every page and every htmx swap and
 * passes it the page's keys first.
 */
(function () {
  "use strict";

  var W = window.CluesWork;
  var $ = W.$, $$ = W.$$, num = W.num, quoted = W.quoted, say = W.say, isControl = W.isControl;

  function initSpans(root) {
    var box = $(root, ".tokens");
    var form = root.closest("form");
    var toks = $$(box, ".tok");
    var submit = $(root, '[data-role="submit"]');
    var none = $(root, '[data-role="none"]');
    var hidden = $(root, "[data-spans]");
    var chips = $(root, "[data-chips]");
    var touchBox = $(root, "[data-touch-pending]");
    var empty = $(root, "[data-empty]");
    var max = parseInt(root.getAttribute("data-max"), 10) || 0; // 0 = any number
    // touchAnchor: on a touch screen with one answer, the first word tapped, waiting for the tap on the last word.
    // separate: "New name" pressed, the next click or tap does not extend a neighbouring mark.
    var st = { marks: [], anchor: null, lastMark: null, cursor: 0, selAnchor: null, pending: null, drag: null,
      touchAnchor: null, separate: false };
    var HOLD_MS = 500; // a press held this long on one word is a hold: a name starts there

    toks.forEach(function (t, i) { t.dataset.i = String(i); });

    function markOf(i) {
      for (var k = 0; k < st.marks.length; k++) {
        if (st.marks[k][0] <= i && i <= st.marks[k][1]) { return st.marks[k]; }
      }
      return null;
    }
    function textOf(a, b) {
      var range = document.createRange();
      range.setStartBefore(toks[a]);
      range.setEndAfter(toks[b]);
      return range.toString();
    }
    function sameMark(m1, m2) { return !!m1 && !!m2 && m1[0] === m2[0] && m1[1] === m2[1]; }

    function addMark(a, b, replacing) {
      if (a > b) { var t = a; a = b; b = t; }
      var keep = st.marks.filter(function (m) { return !sameMark(m, replacing); });
      if (max === 1) {
        keep = [];
      } else {
        for (var k = 0; k < keep.length; k++) {
          if (keep[k][0] <= b && a <= keep[k][1]) {
            say(root, "Not marked: it overlaps " + quoted(textOf(keep[k][0], keep[k][1])) +
              ", which is already marked. Remove that mark first.");
            render();
            return null;
          }
        }
      }
      var mark = [a, b];
      keep.push(mark);
      keep.sort(function (x, y) { return x[0] - y[0]; });
      st.marks = keep;
      say(root, "Marked " + quoted(textOf(a, b)) + ".");
      render();
      return mark;
    }
    function removeMark(mark) {
      st.marks = st.marks.filter(function (m) { return !sameMark(m, mark); });
      if (sameMark(st.lastMark, mark)) { st.lastMark = null; st.anchor = null; }
      say(root, "Removed " + quoted(textOf(mark[0], mark[1])) + ".");
      render();
    }

    function render() {
      toks.forEach(function (t, i) {
        var m = markOf(i);
        var inPending = st.pending && i >= Math.min(st.pending[0], st.pending[1]) &&
          i <= Math.max(st.pending[0], st.pending[1]);
        t.classList.toggle("marked", !!m);
        t.classList.toggle("m-start", !!m && m[0] === i);
        t.classList.toggle("m-end", !!m && m[1] === i);
        t.classList.toggle("pending", !!inPending);
        t.classList.toggle("anchor", i === st.touchAnchor || (!!st.drag && st.drag.held && i === st.drag.start));
        t.classList.toggle("cursor", i === st.cursor && document.activeElement === box);
        var gap = t.nextElementSibling;
        if (gap && gap.classList.contains("gap")) {
          var next = toks[i + 1];
          var m2 = next ? markOf(i + 1) : null;
          gap.classList.toggle("marked", !!m && sameMark(m, m2));
          gap.classList.toggle("pending", !!inPending && !!next && st.pending &&
            i + 1 <= Math.max(st.pending[0], st.pending[1]));
        }
      });
      if (toks[st.cursor]) { box.setAttribute("aria-activedescendant", toks[st.cursor].id); }
      chips.replaceChildren();
      st.marks.forEach(function (m) {
        var li = document.createElement("li");
        li.className = "chip";
        var label = document.createElement("span");
        label.textContent = textOf(m[0], m[1]);
        var remove = document.createElement("button");
        remove.type = "button";
        remove.className = "chip-remove";
        remove.textContent = "\u00d7";
        remove.setAttribute("aria-label", "Remove " + quoted(label.textContent));
        remove.addEventListener("click", function () { removeMark(m); box.focus(); });
        li.appendChild(label);
        li.appendChild(remove);
        chips.appendChild(li);
      });
      empty.hidden = st.marks.length > 0;
      hidden.value = JSON.stringify(st.marks.map(function (m) {
        return [num(toks[m[0]], "data-s"), num(toks[m[1]], "data-e")];
      }));
      submit.disabled = st.marks.length === 0;
      none.disabled = st.marks.length > 0;
      if (form && form.hasAttribute("data-revising")) {
        submit.textContent = "Change answer";
      } else if (max === 1) {
        submit.textContent = "Submit answer";
      } else {
        submit.textContent = st.marks.length ? "Submit " + st.marks.length + " marked" : "Submit";
      }
      none.title = st.marks.length ? "Remove your marks first" : "";
      if (touchBox) {
        var open = st.touchAnchor !== null;
        var grows = max !== 1 && st.lastMark && markOf(st.lastMark[0]);
        // On a touch screen this row also says what the status line says (hidden there, still announced).
        var said = $(root, "[data-status]").textContent;
        $(touchBox, "[data-touch-text]").textContent = open
          ? quoted(textOf(st.touchAnchor, st.touchAnchor)) + " marked. Longer? Tap its last word."
          : (said || (max === 1 ? (st.marks.length ? "Tap the answer to remove it." : "Tap a word to mark it.")
            : (grows ? "The next word makes the name longer. Hold a word to start a new name."
              : (st.marks.length ? "Tap a mark to remove it. Hold a word to start a new name."
                : "Tap each word of a name, a comma inside it too."))));
        var sep = $(touchBox, '[data-role="separate"]');
        sep.hidden = max === 1 || !st.marks.length;
        sep.setAttribute("aria-pressed", st.separate ? "true" : "false");
      }
      root.classList.toggle("touch-waiting", st.touchAnchor !== null);
    }

    // The mark a plain click or tap on word i would extend: one that ends right before it or starts right after it
    // (the one made or extended last first), unless the worker asked for a new name.
    function neighbour(i) {
      if (st.separate) { return null; }
      var near = st.marks.filter(function (m) { return m[1] === i - 1 || m[0] === i + 1; });
      if (!near.length) { return null; }
      return near.find(function (m) { return sameMark(m, st.lastMark); }) || near[0];
    }

    // A plain click or tap: on a marked word it removes that mark; on the word right after (or before) a mark it
    // extends that mark by the word; on the one word between two marks it joins them ("Flagstaff" and "Arizona",
    // then the comma: "Flagstaff , Arizona"); anywhere else it starts a new one-word mark. So a name of k words
    // (a comma inside it counted) is k taps in any order, names in a list are never merged (the comma between
    // two names is never tapped for either), and there is no mode to leave. A name that starts right after
    // another ("Real Madrid Barcelona") starts with a hold (below), Ctrl-click or "New name".
    function click(i, shift) {
      if (shift && st.anchor !== null) {
        var previous = st.lastMark;
        var mark = addMark(st.anchor, i, previous);
        if (mark) { st.lastMark = mark; }
        render();
        return;
      }
      var existing = markOf(i);
      var separate = st.separate;
      var grow = existing || max === 1 ? null : neighbour(i);
      st.separate = false;
      if (existing) {
        removeMark(existing);
        return;
      }
      var before = separate || max === 1 ? null : st.marks.find(function (m) { return m[1] === i - 1; });
      var after = separate || max === 1 ? null : st.marks.find(function (m) { return m[0] === i + 1; });
      var made;
      if (before && after) {
        st.marks = st.marks.filter(function (m) { return !sameMark(m, after); });
        made = addMark(before[0], after[1], before);
      } else {
        made = grow ? addMark(Math.min(grow[0], i), Math.max(grow[1], i), grow) : addMark(i, i, null);
      }
      st.anchor = made ? made[0] : null;
      st.lastMark = made;
      render();
    }

    // A hold (a press kept still on one word) starts a name at that word, never joined to the mark before it: an
    // unmarked word becomes a mark of its own; a word inside a mark splits it there ("Real Madrid Barcelona",
    // then a hold on "Barcelona": two names). The next taps on the words after it make it longer; sliding on
    // before letting go marks the name to the word let go on. Returns the mark that now starts there.
    function startName(i) {
      var existing = markOf(i);
      var made;
      if (existing && existing[0] === i) {
        made = existing;
        say(root, quoted(textOf(existing[0], existing[1])) + " starts a name.");
      } else if (existing) {
        st.marks = st.marks.filter(function (m) { return !sameMark(m, existing); });
        st.marks.push([existing[0], i - 1]);
        made = addMark(i, existing[1], null);
        if (made) {
          say(root, "Two names: " + quoted(textOf(existing[0], i - 1)) + " and " + quoted(textOf(i, existing[1])) + ".");
        }
      } else {
        made = addMark(i, i, null);
        if (made) { say(root, quoted(textOf(i, i)) + " starts a new name. Tap its next word to make it longer."); }
      }
      st.separate = false;
      st.anchor = made ? made[0] : null;
      st.lastMark = made;
      render();
      return made;
    }

    // Touch has no shift key. With one answer (max 1) a tap marks its word at once and keeps it open: a tap on
    // another word makes the answer run from the first word to that one (a tap on the mark removes it). With
    // several names a tap is a click (above). The bar's row for this is always there on a touch screen, so nothing
    // new appears under the finger of the tap in progress.
    function tap(i) {
      if (max !== 1) { st.touchAnchor = null; click(i, false); return; }
      var existing = markOf(i);
      if (st.touchAnchor !== null && st.touchAnchor !== i && !existing) {
        var a = st.touchAnchor;
        var open = markOf(a);
        var mark = addMark(a, i, open && open[0] === a && open[1] === a ? open : null);
        if (mark) { st.touchAnchor = null; st.anchor = Math.min(a, i); st.lastMark = mark; }
        render();
        return;
      }
      st.touchAnchor = null;
      if (existing) { removeMark(existing); return; }
      var made = addMark(i, i, null);
      st.touchAnchor = made ? i : null;
      st.anchor = made ? i : null;
      st.lastMark = made;
      render();
    }
    if (touchBox) {
      // "New name": the next click or tap on a word next to a mark starts its own mark. It counts only when the
      // press began on it (or it comes from the keyboard): a click that follows a tap on a word is that word's.
      var separateButton = $(touchBox, '[data-role="separate"]');
      var pressed = false;
      separateButton.addEventListener("pointerdown", function () { pressed = true; });
      separateButton.addEventListener("click", function (e) {
        var own = pressed || e.detail === 0;
        pressed = false;
        if (!own) { e.preventDefault(); return; }
        st.separate = !st.separate;
        say(root, st.separate ? "The next word you mark starts a new name." : "");
        render();
      });
    }

    function tokenAt(x, y) {
      var el = document.elementFromPoint(x, y);
      var tok = el && el.closest ? el.closest(".tok") : null;
      return tok && box.contains(tok) ? parseInt(tok.dataset.i, 10) : null;
    }

    // A press on a word: let go at once, a tap (or click); moved to another word, a drag that marks from the word
    // pressed to the word let go on, as one name (a comma inside included, never joined to a neighbouring mark);
    // held still for HOLD_MS, a hold (startName), after which the finger may slide on to the name's last word, in
    // any direction and across lines (the page does not scroll while a hold lasts). A quick swipe up or down
    // scrolls the page as anywhere else (touch-action: pan-y).
    function endHold() {
      if (st.drag && st.drag.timer) { clearTimeout(st.drag.timer); st.drag.timer = null; }
    }
    box.addEventListener("pointerdown", function (e) {
      var tok = e.target.closest(".tok");
      if (!tok || e.button !== 0) { return; }
      e.preventDefault();
      endHold();
      var i = parseInt(tok.dataset.i, 10);
      // Ctrl- (or Alt-, Cmd-) click: a new name even next to another (the mouse's "New name").
      var drag = st.drag = { start: i, cur: i, shift: e.shiftKey, fresh: e.ctrlKey || e.altKey || e.metaKey,
        id: e.pointerId, touch: e.pointerType === "touch" || e.pointerType === "pen", held: false, heldMark: null,
        timer: null };
      if (!drag.shift) {
        drag.timer = setTimeout(function () {
          drag.timer = null;
          if (st.drag !== drag || drag.cur !== drag.start) { return; }
          drag.held = true;
          drag.heldMark = max === 1 ? null : startName(drag.start);
          st.pending = [drag.start, drag.start];
          render();
        }, HOLD_MS);
      }
      st.pending = [i, i];
      render();
    });
    // While a hold lasts the finger's moves mark, they do not scroll (a listener that may cancel them).
    box.addEventListener("touchmove", function (e) {
      if (st.drag && st.drag.held && e.cancelable) { e.preventDefault(); }
    }, { passive: false });
    // A hold on a phone is not a call for the browser's menu.
    box.addEventListener("contextmenu", function (e) {
      if (st.drag || (e.target.closest && e.target.closest(".tok") && e.pointerType !== "mouse" &&
        window.matchMedia("(pointer: coarse)").matches)) { e.preventDefault(); }
    });
    document.addEventListener("pointermove", function (e) {
      if (!st.drag || e.pointerId !== st.drag.id || !document.body.contains(box)) { return; }
      var i = tokenAt(e.clientX, e.clientY);
      if (i === null || i === st.drag.cur) { return; }
      endHold();
      st.drag.cur = i;
      st.pending = [st.drag.start, i];
      render();
    });
    document.addEventListener("pointerup", function (e) {
      if (!st.drag || e.pointerId !== st.drag.id) { return; }
      var drag = st.drag;
      endHold();
      var end = tokenAt(e.clientX, e.clientY);
      if (end === null) { end = drag.cur; }
      st.drag = null;
      st.pending = null;
      if (end !== drag.start && !drag.shift) {
        st.touchAnchor = null;
        st.separate = false;
        var mark = addMark(drag.start, end, drag.heldMark);
        if (!mark && drag.heldMark) { render(); return; } // refused (it overlaps): the hold's name stays
        st.anchor = mark ? drag.start : null;
        st.lastMark = mark;
      } else if (drag.held && max !== 1) {
        // The hold's name is made already (startName).
      } else if (drag.touch) {
        tap(end);
      } else {
        if (drag.fresh) { st.separate = true; }
        click(end, drag.shift);
      }
      st.cursor = end;
      render();
    });
    document.addEventListener("pointercancel", function (e) {
      if (st.drag && e.pointerId === st.drag.id) { endHold(); st.drag = null; st.pending = null; render(); }
    });

    function lineMove(dir) {
      var here = toks[st.cursor].getBoundingClientRect();
      var x = here.left + here.width / 2;
      var best = null;
      var bestTop = null;
      for (var i = st.cursor + dir; i >= 0 && i < toks.length; i += dir) {
        var r = toks[i].getBoundingClientRect();
        var otherLine = dir > 0 ? r.top >= here.bottom - 2 : r.bottom <= here.top + 2;
        if (!otherLine) { continue; }
        if (bestTop === null) { bestTop = r.top; }
        if (Math.abs(r.top - bestTop) > 2) { break; }
        if (best === null || Math.abs(r.left + r.width / 2 - x) < best.d) {
          best = { i: i, d: Math.abs(r.left + r.width / 2 - x) };
        }
      }
      return best ? best.i : st.cursor;
    }

    // Names start with a capital (or a digit), and so do sentences: Ctrl+arrow (or [ and ]) jumps between those
    // words, so that an expert reaches a name in a few keys instead of one key per word.
    var stops = toks.map(function (t, i) {
      var w = t.textContent, first = w.charAt(0), prev = i ? toks[i - 1].textContent : ".";
      var sentence = prev === "." || prev === "!" || prev === "?";
      return !!first && (/[0-9]/.test(first) || (first !== first.toLowerCase()) ||
        (sentence && first.toLowerCase() !== first.toUpperCase()));
    });
    function nextStop(from, dir) {
      for (var i = from + dir; i >= 0 && i < toks.length; i += dir) { if (stops[i]) { return i; } }
      return from;
    }

    box.addEventListener("keydown", function (e) {
      if (e.altKey || e.metaKey) { return; }
      var to = null;
      var jump = (e.ctrlKey && (e.key === "ArrowRight" || e.key === "ArrowLeft")) ||
        (!e.ctrlKey && (e.key === "]" || e.key === "[" || e.key === "}" || e.key === "{"));
      if (jump) {
        to = nextStop(st.cursor, e.key === "ArrowRight" || e.key === "]" || e.key === "}" ? 1 : -1);
      } else if (e.ctrlKey) {
        return;
      } else if (e.key === "ArrowRight") { to = Math.min(st.cursor + 1, toks.length - 1); }
      else if (e.key === "ArrowLeft") { to = Math.max(st.cursor - 1, 0); }
      else if (e.key === "ArrowDown") { to = lineMove(1); }
      else if (e.key === "ArrowUp") { to = lineMove(-1); }
      else if (e.key === "Home") { to = 0; }
      else if (e.key === "End") { to = toks.length - 1; }
      if (to !== null) {
        e.preventDefault();
        if (e.shiftKey || e.key === "}" || e.key === "{") {
          if (st.selAnchor === null) { st.selAnchor = st.cursor; }
          st.cursor = to;
          st.pending = [st.selAnchor, st.cursor];
        } else {
          st.cursor = to;
          st.selAnchor = null;
          st.pending = null;
        }
        toks[st.cursor].scrollIntoView({ block: "nearest" });
        render();
        return;
      }
      if (e.key === " " || e.key === "Spacebar") {
        e.preventDefault();
        if (st.selAnchor !== null) {
          var mark = addMark(st.selAnchor, st.cursor, null);
          st.anchor = mark ? Math.min(st.selAnchor, st.cursor) : null;
          st.lastMark = mark;
          st.selAnchor = null;
          st.pending = null;
          render();
        } else {
          click(st.cursor, false);
        }
      } else if (e.key === "Escape") {
        st.selAnchor = null;
        st.pending = null;
        st.touchAnchor = null;
        render();
      } else if (e.key === "Delete" || e.key === "Backspace") {
        e.preventDefault();
        var m = markOf(st.cursor);
        if (m) { removeMark(m); }
      } else if (e.key === "Enter") {
        e.preventDefault();
        trySubmit();
      }
    });
    box.addEventListener("focus", render);
    box.addEventListener("blur", render);

    function trySubmit() {
      if (st.marks.length && !submit.disabled) {
        form.requestSubmit(submit);
      } else if (!st.marks.length) {
        say(root, "Nothing is marked yet. Mark the answer in the text, or press " + quoted(none.textContent.trim()) + ".");
      }
    }
    root.trySubmit = trySubmit;
    // "N": the "none" button, focused, so that Enter (or a click) submits it: a choice, then a confirmation.
    root.chooseNone = function () {
      if (none.disabled) {
        say(root, "Something is marked: remove your marks first to answer " + quoted(noneName()) + ".");
        return;
      }
      none.focus();
      say(root, "Press Enter to submit " + quoted(noneName()) + ", or keep marking in the text.");
    };
    function noneName() { return none.firstChild.textContent.trim(); }
    // A test answer being changed: its spans come marked (offsets of the server's tokens).
    try {
      JSON.parse(root.getAttribute("data-initial") || "[]").forEach(function (span) {
        var a = toks.findIndex(function (t) { return num(t, "data-s") === span[0]; });
        var b = toks.findIndex(function (t) { return num(t, "data-e") === span[1]; });
        if (a >= 0 && b >= a) { st.marks.push([a, b]); }
      });
    } catch (err) { st.marks = []; }
    render();
    say(root, "");
  }

  W.widget("spans", {
    init: initSpans,
    key: function (e, root) {
      // "N": the "none" button; Enter outside the text (the text's own keys handle it there): submit.
      if (root.chooseNone && (e.key === "n" || e.key === "N") && !e.shiftKey) {
        e.preventDefault();
        root.chooseNone();
        return true;
      }
      if (e.key === "Enter" && !isControl(e.target) && !root.contains(e.target) && root.trySubmit) {
        e.preventDefault();
        root.trySubmit();
        return true;
      }
      return false;
    }
  });
})();
