() => {
  // Figures drawn for the app (visual/fit.py) fill their container's width; here their token
  // labels and tick labels are cut to the width the browser gives them (the rules of
  // visual.tree_layout.label_chars and visual.fit.thin_ticks), a click on a tree box shows its whole
  // token beside the tree, and the download buttons export each figure's 16:9 slide with the
  // Plotly.js Gradio loaded (window.Plotly). No network is needed.
  const SLIDE = __SLIDE__;
  const PRESENT = __PRESENT__;
  const hooked = new WeakSet();
  // On a touch screen a drag that pans a plot would take every swipe over it, and a tall tree
  // could not be scrolled past: there a swipe scrolls the page (range sliders still move the view).
  const TOUCH = window.matchMedia("(pointer: coarse)").matches;
  const PHONE = window.matchMedia("(max-width: 640px)");  // ui/page.py's phone layout

  const esc = (t) => t.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
  const cut = (t, n) => {
    const chars = Array.from(t);
    return chars.length <= n ? t : (n > 1 ? chars.slice(0, n - 1).join("") + "…" : "…");
  };
  const pxPerUnit = (ax) => ax._length / Math.abs(ax.range[1] - ax.range[0]);
  const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);

  // The present switch (ui/present.py): no font on a figure smaller than PRESENT.vw % of the
  // window's width (24 px at 1920) nor PRESENT.min_px, a figure's height grown with its body
  // font, so its rows keep room for their labels.
  const floorPx = () => (document.documentElement.classList.contains("present")
                         ? Math.max(PRESENT.min_px, Math.round(window.innerWidth * PRESENT.vw / 100)) : 0);
  const setPath = (obj, path, v) => {
    const last = path.length - 1;
    path.slice(0, last).reduce((o, k) => (o[k] = o[k] || {}), obj)[path[last]] = v;
  };
  // Every font size set in a trace or a layout: [path, size] (annotations by their index).
  function fontsOf(obj, path, out) {
    for (const [k, v] of Object.entries(obj || {})) {
      if (k === "meta" || k === "template" || !v || typeof v !== "object") continue;
      if (Array.isArray(v)) {
        if (k === "annotations") v.forEach((a, i) => fontsOf(a, path.concat([k, i]), out));
      } else {
        if (/font$/.test(k) && v.size !== undefined) out.push([path.concat([k, "size"]), v.size]);
        fontsOf(v, path.concat([k]), out);
      }
    }
    return out;
  }
  // A figure with its fonts raised to `floor` (0: as drawn), from the sizes it was drawn with.
  function presented(data, layout, floor) {
    const was = (layout.meta && layout.meta.present) || {floor: 0, base: []};
    if (was.floor === floor) return null;
    const fig = structuredClone({data: data, layout: layout});
    for (const [where, path, size] of was.base) setPath(where < 0 ? fig.layout : fig.data[where], path, size);
    const base = [];
    const body = (fig.layout.font && fig.layout.font.size) || 12;  // Plotly's own default
    const raise = (where, obj) => {
      for (const [path, size] of fontsOf(obj, [], [])) {
        const up = Array.isArray(size) ? size.map((s) => Math.max(s, floor)) : Math.max(size, floor);
        if (same(up, size)) continue;
        base.push([where, path, size]);
        setPath(obj, path, up);
      }
    };
    if (floor) {
      if (!(fig.layout.font && fig.layout.font.size)) setPath(fig.layout, ["font", "size"], body);
      raise(-1, fig.layout);
      fig.data.forEach((t, i) => raise(i, t));
      if (fig.layout.height) {
        base.push([-1, ["height"], fig.layout.height]);
        fig.layout.height = Math.round(fig.layout.height * Math.max(1, floor / body));
      }
    }
    fig.layout.meta = Object.assign({}, fig.layout.meta);
    if (floor) fig.layout.meta.present = {floor: floor, base: base, scale: Math.max(1, floor / body)};
    else delete fig.layout.meta.present;
    return fig;
  }
  const scaleOf = (gd) => (gd.layout.meta && gd.layout.meta.present && gd.layout.meta.present.scale) || 1;

  function labelText(gd, spec) {
    const lay = gd._fullLayout, k = scaleOf(gd);
    const fits = pxPerUnit(lay.yaxis) >= spec.min_lane_px * k;
    const n = fits ? Math.floor((pxPerUnit(lay.xaxis) * spec.box - spec.pad * k) / (spec.char_px * k)) : 0;
    return spec.full.map((t) => (n >= 2 ? esc(cut(t, n)) : ""));
  }

  function thin(vals, unitPx, minPx, keep) {
    const step = Math.max(1, Math.ceil(minPx / Math.max(unitPx, 1e-9)));
    const chosen = keep.filter((k) => vals.includes(k));
    for (const v of vals) {
      if ((v - vals[0]) % step === 0 && chosen.every((k) => Math.abs(v - k) >= step)) chosen.push(v);
    }
    return new Set(chosen);
  }

  // A figure too narrow for `minPx` is drawn that wide in a box its reader scrolls sideways (a phone
  // swipes it); wide enough again, it fills its container. True when it is drawn again.
  function scrolled(gd, minPx) {
    const box = gd.parentElement;
    const want = minPx && box.clientWidth < minPx ? Math.ceil(minPx) : null;
    box.classList.toggle("fig-scroll", want !== null);
    gd.style.width = want === null ? "" : want + "px";  // the plot's own box as wide as what it draws
    if ((gd.layout.width || null) === want) return false;
    window.Plotly.relayout(gd, {width: want});
    return true;
  }

  // A tree too deep for readable labels at this width shows its first columns, a slider under it for
  // the rest; on a phone, where the slider's miniature is a strip of unlabelled boxes, every column
  // in a box swiped sideways. Once per figure: a live plot (ui/live_plot.js) draws each new figure,
  // with a new layout, in the same plot.
  function windowed(gd, w) {
    if (gd._windowedLayout === gd.layout) return false;
    gd._windowedLayout = gd.layout;
    const lay = gd._fullLayout, span = w.range[1] - w.range[0], col = w.col_px * scaleOf(gd);
    const cols = Math.max(2, Math.floor(lay.xaxis._length / col));
    if (cols >= span) return scrolled(gd, 0);
    if (PHONE.matches) return scrolled(gd, lay.width - lay.xaxis._length + span * col);
    // Drawn in large type: the height it goes back to without it keeps the slider's room too.
    const present = gd.layout.meta && gd.layout.meta.present;
    if (present) present.base.forEach((b) => { if (b[0] < 0 && b[1].join() === "height") b[2] += w.slider_px; });
    window.Plotly.relayout(gd, {"xaxis.range": [w.range[0], w.range[0] + cols],
                                "xaxis.rangeslider": {visible: true, range: w.range, thickness: 0.08},
                                "height": gd._fullLayout.height + w.slider_px});
    return true;
  }

  // A legend in rows above the plot (the race's: an entry a lane) lays its entries in as many columns
  // of the widest entry's width as the figure holds, and takes its height from the figure, not the
  // plot: the figure grows or shrinks until its plot is `plot_px` tall again.
  function legendRoom(gd, spec) {
    const lay = gd._fullLayout;
    const texts = [...gd.querySelectorAll(".legend .legendtext")];
    const widest = Math.ceil(Math.max(0, ...texts.map((t) => t.getBBox().width + (parseFloat(t.getAttribute("x")) || 0)))) + 12;
    if (texts.length && Math.abs((lay.legend.entrywidth || 0) - widest) > 2) {
      window.Plotly.relayout(gd, {"legend.entrywidth": widest, "legend.entrywidthmode": "pixels"});
      return true;
    }
    const missing = Math.round(spec.plot_px * scaleOf(gd) - lay.yaxis._length);
    if (Math.abs(missing) <= 2) return false;
    gd._fitWidth = true;  // Plotly fixes the width it has now along with the height: a new window width resizes it
    window.Plotly.relayout(gd, {height: lay.height + missing});
    return true;
  }

  function fit(gd) {
    const spec = gd.layout && gd.layout.meta && gd.layout.meta.fit;
    if (!spec || !gd._fullLayout || !gd._fullLayout.xaxis || !gd.offsetWidth) return;
    if (spec.window && windowed(gd, spec.window)) return;  // fit() runs again once it is drawn
    if (spec.legend && legendRoom(gd, spec.legend)) return;  // the same
    if (spec.min_px && scrolled(gd, spec.min_px * scaleOf(gd))) return;  // the same
    if (spec.labels) {
      const text = labelText(gd, spec.labels);
      if (!same(text, gd.data[spec.labels.trace].text)) window.Plotly.restyle(gd, {text: [text]}, [spec.labels.trace]);
    }
    if (spec.ticks) {
      const t = spec.ticks;
      const shown = thin(t.vals, pxPerUnit(gd._fullLayout[t.axis]), t.min_px * scaleOf(gd), t.keep);
      const vals = t.vals.filter((v) => shown.has(v));
      const text = t.text.filter((_, i) => shown.has(t.vals[i]));
      if (!same(vals, gd.layout[t.axis].tickvals)) {
        window.Plotly.relayout(gd, {[t.axis + ".tickvals"]: vals, [t.axis + ".ticktext"]: text});
      }
    }
  }

  function showNode(gd, ev) {
    const panel = document.getElementById("tree-node");
    const point = ev && ev.points && ev.points.find((p) => p.data && p.data.hovertext);
    if (!panel || !point || !gd.closest("#tree-plot")) return;
    panel.innerHTML = point.data.hovertext[point.pointNumber];  // drawn by visual.tree, tokens escaped
  }

  function hook(gd) {
    if (hooked.has(gd) || typeof gd.on !== "function") return;
    hooked.add(gd);
    gd.on("plotly_afterplot", () => settle(gd));
    gd.on("plotly_click", (ev) => showNode(gd, ev));
    // A plot drawn in a hidden tab, or in a container that changed width, is laid out again.
    new ResizeObserver(() => {
      if (!gd._fullLayout || !gd.offsetWidth || Math.abs(gd._fullLayout.width - gd.offsetWidth) <= 1) return;
      if (gd._fitWidth) window.Plotly.relayout(gd, {width: gd.offsetWidth});  // Plotly's resize leaves a fixed size be
      else if (!gd.layout.width) window.Plotly.Plots.resize(gd);
    }).observe(gd);
    setTimeout(() => settle(gd), 0);
  }

  function settle(gd) {
    if (TOUCH && gd._fullLayout && gd._fullLayout.dragmode !== false) {
      window.Plotly.relayout(gd, {dragmode: false});  // drawn again: settle() runs once more
      return;
    }
    const fig = gd.layout && presented(gd.data || [], gd.layout, floorPx());
    if (fig) {
      if (gd._windowedLayout === gd.layout) gd._windowedLayout = fig.layout;  // it keeps its slider
      window.Plotly.react(gd, fig.data, fig.layout);  // drawn again: settle() runs once more
      return;
    }
    fit(gd);
  }
  const settleAll = () => document.querySelectorAll(".js-plotly-plot").forEach((gd) => gd._fullLayout && settle(gd));
  let resized = null;
  window.addEventListener("resize", () => {
    clearTimeout(resized);
    resized = setTimeout(() => floorPx() && settleAll(), 200);  // the floor follows the window's width
  });

  let queued = false;
  new MutationObserver(() => {
    if (queued) return;
    queued = true;
    requestAnimationFrame(() => {
      queued = false;
      document.querySelectorAll(".js-plotly-plot").forEach(hook);
    });
  }).observe(document.body, {childList: true, subtree: true});

  // The figure as drawn before the present switch raised its fonts (a slide has its own sizes).
  const unpresented = (gd) => presented(gd.data, gd.layout, 0) || {data: gd.data, layout: gd.layout};

  function slideOf(gd) {
    const fig = unpresented(gd);
    const patch = fig.layout.meta.slide;
    const apply = (obj, changes) => {
      const out = Object.assign({}, obj);
      for (const [k, v] of Object.entries(changes || {})) {
        if (v === null) delete out[k]; else out[k] = v;
      }
      return out;
    };
    const layout = apply(fig.layout, patch.layout);
    layout.meta = {};  // nothing left for fit() to re-cut: the slide's labels are its own
    return {data: fig.data.map((t, i) => apply(t, patch.data[i])), layout: layout, config: {}};
  }

  window.logitspecFigures = {
    slideOf: slideOf,
    // A LivePlot's new figure, raised before its one draw (ui/live_plot.js); null: as it is.
    present: (data, layout) => presented(data, layout, floorPx()),
    // The present switch turned on or off: every figure on the page drawn again for it.
    presentChanged: settleAll,
    download(elemId, format) {
      const gd = document.querySelector("#" + elemId + " .js-plotly-plot");
      if (!gd || !gd.layout || !window.Plotly) return null;
      const meta = gd.layout.meta || {};
      const name = "logitspec-" + elemId + (meta.step === undefined ? "" : "-step" + meta.step);
      // A figure without a slide of its own (the trie) is laid out at the slide's size as it is.
      return window.Plotly.downloadImage(meta.slide ? slideOf(gd) : unpresented(gd), {format: format, width: SLIDE.width,
                                         height: SLIDE.height, scale: SLIDE.scale, filename: name});
    },
  };
}
