"""Keyboard shortcuts for presenting: ← / → step, space plays or pauses.

They press the visible tab's own buttons (the Step explorer's, else the Explain tab's), so a
key does exactly what a click does. Keys typed into a text box, a number box or a slider
are left alone, and so is space on a focused button (it presses that button already).
"""

KEYS_JS = """
() => {
  if (window.__logitspecKeys) return;
  window.__logitspecKeys = true;
  const shown = (el) => !!el && el.offsetParent !== null;
  const press = (id) => {
    const b = document.getElementById(id);
    if (!shown(b) || b.disabled) return false;
    b.click();
    return true;
  };
  const typing = (t) => !!t && (t.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(t.tagName));
  document.addEventListener('keydown', (e) => {
    if (e.defaultPrevented || e.altKey || e.ctrlKey || e.metaKey || typing(e.target)) return;
    const explorer = shown(document.getElementById('next'));
    const prefix = explorer ? '' : (shown(document.getElementById('explain-next')) ? 'explain-' : null);
    if (prefix === null) return;
    let id = null;
    if (e.key === 'ArrowRight') id = prefix + 'next';
    else if (e.key === 'ArrowLeft') id = prefix + 'prev';
    else if (e.key === ' ' && explorer && !(e.target && e.target.closest('button'))) id = 'play';
    if (id && press(id)) e.preventDefault();
  });
}
"""
