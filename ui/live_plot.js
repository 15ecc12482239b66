// The body of a LivePlot's js_on_load (ui/figures.py): `element`, `props` and `watch` are Gradio's.
// Each new figure is drawn into the same plot with Plotly.react, which changes only what changed;
// gr.Plot mounts a new plot for every value, drawing each figure twice from nothing.
const host = element.querySelector(".live-plot-host");
const touch = window.matchMedia("(pointer: coarse)").matches;
let drawn = null;
// Gradio loads Plotly.js with its first gr.Plot; a page that has none yet loads the same module.
const loadPlotly = () => {
  if (window.Plotly || window.__logitspecPlotly) return;
  const index = document.querySelector('script[src*="/assets/index-"]');
  if (!index) return;
  window.__logitspecPlotly = import(new URL("__PLOTLY_CHUNK__", index.src).href).catch(() => null);
};
// figures.js thins an axis's tick labels to the plot's width after each draw, drawing it again; a
// figure with the same ticks as the last takes the last one's thinning at once (fit() still checks).
const keepTicks = (layout) => {
  const t = layout.meta && layout.meta.fit && layout.meta.fit.ticks;
  const old = host.layout;
  const was = old && old.meta && old.meta.fit && old.meta.fit.ticks;
  if (!t || !was || t.axis !== was.axis || JSON.stringify(t.vals) !== JSON.stringify(was.vals)) return;
  const shown = new Set((old[t.axis] && old[t.axis].tickvals) || []);
  if (!shown.size) return;
  layout[t.axis] = Object.assign({}, layout[t.axis], {tickvals: t.vals.filter((v) => shown.has(v)),
                                                      ticktext: t.text.filter((_, i) => shown.has(t.vals[i]))});
};
const kind = (layout) => Object.keys(layout.meta || {}).sort().join();  // a step's figure keeps its kind
const draw = () => {
  const value = props.value;
  if (!value || value === drawn) return;
  if (!window.Plotly) {
    loadPlotly();
    setTimeout(draw, 50);
    return;
  }
  drawn = value;
  const fig = JSON.parse(value);
  // As gr.Plot lays a figure out: the container's width, margins grown to fit their labels.
  let layout = Object.assign({}, fig.layout, {autosize: true});
  layout.margin = Object.assign({}, layout.margin, {autoexpand: true});
  keepTicks(layout);
  if (touch) layout.dragmode = false;  // a swipe over a plot scrolls the page (figures.js)
  const config = Object.assign({responsive: true}, fig.config);
  // With the present switch on, its fonts are raised before the one draw a step move makes.
  const up = window.logitspecFigures && window.logitspecFigures.present(fig.data || [], layout);
  const data = up ? up.data : fig.data || [];
  if (up) layout = up.layout;
  if (!host.layout || kind(host.layout) === kind(layout)) {
    window.Plotly.react(host, data, layout, config);
    return;
  }
  // Another kind of figure (the trie after the lanes): drawn afresh, so no margin the last one
  // pushed out is kept; the listeners figures.js hung on the plot go on to the new drawing.
  const listeners = host._ev ? host._ev.eventNames().map((e) => [e, host._ev.listeners(e)]) : [];
  window.Plotly.newPlot(host, data, layout, config).then(() => {
    for (const [e, fns] of listeners) fns.forEach((fn) => host.on(e, fn));
    host.emit("plotly_afterplot");  // drawn before the listeners were back: figures.js fits it now
  });
};
draw();
watch("value", draw);
