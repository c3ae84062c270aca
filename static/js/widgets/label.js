/* The label (SST-2, MNLI) widget: the behaviour of data-widget="label" (templates/worker/_widget_label.html).
 *
 * Choose a label (a click or its number key), then submit.
 *
 * Registered with work.js (window.CluesWork.widget), which sets it up on every page and every htmx swap and
 * passes it the page's keys first.
 */
(function () {
  "use strict";

  var W = window.CluesWork;
  var $ = W.$, $$ = W.$$, say = W.say, isControl = W.isControl;

  function initLabels(root) {
    var radios = $$(root, 'input[type="radio"]');
    var submit = $(root, '[data-role="submit"]');
    var choice = $(root, "[data-choice]");
    function update() {
      var chosen = radios.filter(function (r) { return r.checked; })[0];
      submit.disabled = !chosen;
      choice.textContent = chosen ? chosen.value : "none yet";
      if (chosen) { say(root, ""); } // "Your choice" beside Submit says it
    }
    radios.forEach(function (r) { r.addEventListener("change", update); });
    root.choose = function (key) {
      var radio = $(root, 'input[data-key="' + key + '"]');
      if (!radio) { return; }
      radio.checked = true;
      radio.focus();
      update();
    };
    root.trySubmit = function () {
      if (!submit.disabled) {
        root.closest("form").requestSubmit(submit);
      } else {
        say(root, "Choose an answer first: click it, or press its number key.");
      }
    };
    update();
    say(root, "");
  }

  W.widget("label", {
    init: initLabels,
    key: function (e, root) {
      // A number key chooses its label; Enter submits the choice.
      if (root.choose && /^[1-9]$/.test(e.key)) {
        e.preventDefault();
        root.choose(e.key);
        return true;
      }
      if (root.trySubmit && e.key === "Enter" && (!isControl(e.target) || e.target.type === "radio")) {
        e.preventDefault();
        root.trySubmit();
        return true;
      }
      return false;
    }
  });
})();
