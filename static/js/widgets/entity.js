/* The candidate entity (ReCoRD) widget: the behaviour of data-widget="entity" (templates/worker/_widget_entity.html).
 *
 * Offsets: the server renders every candidate's start/end (Python code points) into data-s/data-e; this script
 * only ever sends those numbers back, never JavaScript string indices (UTF-16). Dataset text is only read with
 * textContent / Range.toString and written with textContent.
 *
 * Registered with work.js (window.CluesWork.widget), which sets it up on every page and every htmx swap and
 * passes it the page's keys first (it has none: the article's own keys choose).
 */
(function () {
  "use strict";

  var W = window.CluesWork;
  var $ = W.$, $$ = W.$$, num = W.num, quoted = W.quoted, say = W.say;

  function initEntity(root) {
    var cands = $$(root, ".cand");
    var hidden = $(root, "[data-spans]");
    var extend = $(root, '[data-role="extend"]');
    var submit = $(root, '[data-role="submit"]');
    var choice = $(root, "[data-choice]");
    var stage = root.closest("#stage") || document;
    submit.disabled = true;

    function choose(cand, byKeyboard) {
      var text = cand.textContent;
      cands.forEach(function (c) {
        var chosen = c === cand;
        c.classList.toggle("chosen", chosen);
        c.setAttribute("aria-pressed", chosen ? "true" : "false");
        c.classList.toggle("same", !chosen && c.textContent === text);
      });
      hidden.value = JSON.stringify([[num(cand, "data-s"), num(cand, "data-e")]]);
      $$(stage, "[data-blank]").forEach(function (b) {
        b.textContent = text;
        b.classList.add("filled");
      });
      choice.textContent = text;
      submit.disabled = false;
      submit.textContent = "Submit " + quoted(text);
      if (byKeyboard) {
        submit.focus();
        say(root, "Chosen: " + quoted(text) + ". Press Enter to submit, or Shift+Tab to go back to the article.");
      } else {
        say(root, "Chosen: " + quoted(text) + ".");
      }
    }
    root.addEventListener("click", function (e) {
      var cand = e.target.closest(".cand");
      if (cand) { rove(cand); choose(cand, e.detail === 0); }
    });

    // Keys: the article is one stop of the Tab order (the chosen name, else the first); arrows go from name to
    // name (each name once, in the order they first appear), typing a name's first letters goes to it, and
    // Enter chooses. So an expert needs Tab, a letter or two, Enter and Enter, not a Tab per candidate.
    var names = [];
    var firstOf = {};
    cands.forEach(function (c) {
      var t = c.textContent;
      if (!Object.prototype.hasOwnProperty.call(firstOf, t)) { firstOf[t] = c; names.push(t); }
    });
    function rove(cand) {
      cands.forEach(function (c) { c.tabIndex = c === cand ? 0 : -1; });
    }
    function goTo(index) {
      var c = firstOf[names[(index + names.length) % names.length]];
      rove(c);
      c.focus();
    }
    if (cands.length) { rove(cands[0]); }
    var typed = "";
    var typedAt = 0;
    root.addEventListener("keydown", function (e) {
      var cand = e.target.closest ? e.target.closest(".cand") : null;
      if (!cand || e.altKey || e.ctrlKey || e.metaKey || !names.length) { return; }
      var here = names.indexOf(cand.textContent);
      if (e.key === "ArrowRight" || e.key === "ArrowDown") { e.preventDefault(); goTo(here + 1); }
      else if (e.key === "ArrowLeft" || e.key === "ArrowUp") { e.preventDefault(); goTo(here - 1); }
      else if (e.key === "Home") { e.preventDefault(); goTo(0); }
      else if (e.key === "End") { e.preventDefault(); goTo(names.length - 1); }
      else if (e.key.length === 1 && e.key !== " ") {
        e.preventDefault();
        e.stopPropagation();
        var now = Date.now();
        typed = now - typedAt > 1000 ? e.key.toLowerCase() : typed + e.key.toLowerCase();
        typedAt = now;
        var from = typed.length === 1 ? here + 1 : here;
        for (var k = 0; k < names.length; k++) {
          var at = (from + k) % names.length;
          if (names[at].toLowerCase().indexOf(typed) === 0) { goTo(at); return; }
        }
        say(root, "No name starts with " + quoted(typed) + ".");
      }
    });
    try {
      var initial = JSON.parse(root.getAttribute("data-initial") || "[]")[0];
      var found = initial && cands.filter(function (c) {
        return num(c, "data-s") === initial[0] && num(c, "data-e") === initial[1];
      })[0];
      if (found) { rove(found); choose(found, false); }
    } catch (err) { /* nothing chosen yet */ }
  }

  W.widget("entity", { init: initEntity }); // its keys are the article's own (a click, arrows, letters, Enter)
})();
