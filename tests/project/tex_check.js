// Typesets TeX with the MathJax that the docs site serves (the path given
// as argv[2], MathJax's es5 folder) and prints one JSON line per formula
// that MathJax rejects or leaves with an undefined macro.  Input: a JSON
// list of [where, tex, display] on stdin.  Used by test_docs_math.py.
const fs = require("fs");
const es5 = process.argv[2];
const formulas = JSON.parse(fs.readFileSync(0, "utf8"));
require(es5 + "/node-main.js").init({
  loader: { load: ["input/tex"] },
  tex: { formatError: (jax, err) => { throw err; } },
}).then((MathJax) => {
  for (const [where, tex, display] of formulas) {
    try {
      const mml = MathJax.tex2mml(tex, { display });
      if (mml.includes("merror") || mml.includes('mathcolor="red"')) {
        console.log(JSON.stringify({ where, tex, error: "undefined macro" }));
      }
    } catch (err) {
      console.log(JSON.stringify({ where, tex, error: String(err.message || err) }));
    }
  }
  console.log(JSON.stringify({ checked: formulas.length }));
}).catch((err) => { console.error(err); process.exit(2); });
