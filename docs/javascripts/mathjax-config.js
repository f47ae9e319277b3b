// MathJax 3 for pymdownx.arithmatex (generic mode): typeset only the
// arithmatex spans, again after each page change of Material's instant loading.
window.MathJax = {
  tex: {
    inlineMath: [["\\(", "\\)"]],
    displayMath: [["\\[", "\\]"]],
    processEscapes: true,
    processEnvironments: true,
  },
  options: {
    ignoreHtmlClass: ".*|",
    processHtmlClass: "arithmatex",
  },
};

if (typeof document$ !== "undefined") {
  document$.subscribe(() => {
    // Before MathJax has started, its own startup typesets the page.
    if (!window.MathJax || !MathJax.startup || !MathJax.startup.output || !MathJax.typesetPromise) {
      return;
    }
    if (typeof MathJax.startup.output.clearCache === "function") {  // CHTML only; SVG keeps none
      MathJax.startup.output.clearCache();
    }
    MathJax.typesetClear();
    MathJax.texReset();
    MathJax.typesetPromise();
  });
}
