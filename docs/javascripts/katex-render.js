// Renders the formulas of pymdownx.arithmatex (generic mode: \( \) inline, \[ \] display) with the KaTeX shipped
// beside this file (javascripts/katex/), so that the pages need no network: a site opened from disk shows them too.
// The navigation (the table of contents repeats the headings as text) gets the same treatment for its \( \).
(function () {
  "use strict";
  var INLINE = /\\\(([\s\S]*?)\\\)/g;

  function formulas(root) {
    root.querySelectorAll(".arithmatex").forEach(function (el) {
      if (el.querySelector(".katex")) return; // already rendered (instant navigation runs this again)
      var tex = el.textContent.trim();
      var display = el.tagName !== "SPAN";
      var m = /^\\\(([\s\S]*)\\\)$/.exec(tex) || /^\\\[([\s\S]*)\\\]$/.exec(tex);
      if (m) {
        display = tex.charAt(1) === "[";
        tex = m[1];
      }
      katex.render(tex, el, { displayMode: display, throwOnError: false });
    });
  }

  function navigation(root) {
    root.querySelectorAll("nav").forEach(function (nav) {
      var walker = document.createTreeWalker(nav, NodeFilter.SHOW_TEXT);
      var nodes = [];
      while (walker.nextNode()) {
        if (walker.currentNode.nodeValue.indexOf("\\(") >= 0) nodes.push(walker.currentNode);
      }
      nodes.forEach(function (node) {
        var text = node.nodeValue;
        var out = document.createDocumentFragment();
        var last = 0;
        text.replace(INLINE, function (whole, tex, at) {
          out.appendChild(document.createTextNode(text.slice(last, at)));
          var span = document.createElement("span");
          katex.render(tex, span, { throwOnError: false });
          out.appendChild(span);
          last = at + whole.length;
          return whole;
        });
        out.appendChild(document.createTextNode(text.slice(last)));
        node.parentNode.replaceChild(out, node);
      });
    });
  }

  function render() {
    if (typeof katex === "undefined") return;
    formulas(document.body);
    navigation(document.body);
  }

  if (typeof document$ !== "undefined") {
    document$.subscribe(render);
  } else if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", render);
  } else {
    render();
  }
})();
