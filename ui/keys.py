"""Keyboard shortcuts for presenting, as a slide clicker sends them: → / PageDown / space move on
one stage of the lesson, or one step in the Step explorer or in Explain's detail; ← / PageUp /
shift+space move back; p plays or pauses the explorer. Each press counts for one move.

They press the visible tab's own buttons (the Step explorer's, else the Explain tab's), so a
key does exactly what a click does, whatever has the focus (a tab button just clicked
included); only keys typed into a text box, a number box or a slider are left alone.
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
  const lessonStops = () => Array.from(document.querySelectorAll('#explain-lesson .lesson-stage, #lesson-glossary'))
    .filter(shown);
  const drawn = (stops) => stops.every(el => !el.classList.contains('lesson-stage') || el.querySelector('.main-svg'));
  // A link to Explain opens on the lesson once the page's first reply lands: a press before is the lesson's.
  let landed = new URLSearchParams(window.location.search).get('tab') !== 'explain';
  const watch = landed ? null : setInterval(() => {
    if (shown(document.getElementById('explain-levels'))) { landed = true; clearInterval(watch); }
  }, 100);
  const linked = () => !landed;
  // A press while the lesson is drawn waits until its stages stop moving: before, a stage has no place.
  let waiting = 0, timer = null;
  const later = () => {
    let last = '', still = 0, ticks = 0;
    timer = setInterval(() => {
      const stops = lessonStops();
      const tops = drawn(stops) ? stops.map(el => Math.round(el.getBoundingClientRect().top)).join() : '';
      still = tops && tops === last ? still + 1 : 0;
      last = tops;
      if (still < 3 && ++ticks < 600) return;
      clearInterval(timer);
      timer = null;
      const n = waiting;
      waiting = 0;
      for (let k = 0; k < Math.abs(n) && lessonStops().length; k++) stage(Math.sign(n));
    }, 100);
  };
  // On the lesson, a move brings the previous or next stage (then the glossary) to the top of the
  // screen: each stage fits one screen, so a teacher moves through the lesson one screen at a time.
  const stage = (dir) => {
    const stops = lessonStops();
    if (!stops.length && !linked()) return false;
    if (timer || !stops.length || !drawn(stops)) {
      waiting += dir;
      if (!timer) later();
      return true;
    }
    const tops = stops.map(el => el.getBoundingClientRect().top);
    const i = dir > 0 ? tops.findIndex(t => t > 5) : tops.map(t => t < -5).lastIndexOf(true);
    if (i >= 0) stops[i].scrollIntoView({block: 'start'});
    return true;
  };
  const moves = {ArrowRight: 1, PageDown: 1, ArrowLeft: -1, PageUp: -1};
  document.addEventListener('keydown', (e) => {
    if (e.defaultPrevented || e.altKey || e.ctrlKey || e.metaKey || typing(e.target)) return;
    const explorer = shown(document.getElementById('next'));
    if (e.key === 'p' && explorer && press('play')) { e.preventDefault(); return; }
    const dir = e.key === ' ' ? (e.shiftKey ? -1 : 1) : moves[e.key];
    if (!dir) return;
    // A focused button (the tab just clicked, say) would take space as a press of its own.
    const moved = stage(dir) || (explorer ? press(dir > 0 ? 'next' : 'prev')
                                          : press(dir > 0 ? 'explain-next' : 'explain-prev'));
    if (moved) e.preventDefault();
  }, true);
}
"""

# Previous/Next presses, counted on the page: the page sends one move at a time with every
# press made since the last reply, since replies that overlap can be applied out of order
# and leave the page a step behind the view.
MOVES_JS = """
() => {
  if (window.__logitspecMoves) return;
  window.__logitspecMoves = {};
  const buttons = {'next': ['explorer', 1], 'prev': ['explorer', -1],
                   'explain-next': ['explain', 1], 'explain-prev': ['explain', -1]};
  document.addEventListener('click', (e) => {
    const b = e.target && e.target.closest && e.target.closest('button[id]');
    const move = b && !b.disabled && buttons[b.id];
    if (move) window.__logitspecMoves[move[0]] = (window.__logitspecMoves[move[0]] || 0) + move[1];
  }, true);
}
"""


def presses(by) -> int:
    """The press count a move event carried (`take_moves`); 0 for anything that is not a whole number."""
    try:
        return int(by)
    except (TypeError, ValueError, OverflowError):
        return 0


def take_moves(group: str) -> str:
    """An event's js: its inputs with the last one replaced by the presses counted for `group`
    since the last move was sent (and the count cleared)."""
    return ("(...args) => { const m = window.__logitspecMoves || {}; args[args.length - 1] = m['%s'] || 0;"
            " m['%s'] = 0; return args; }" % (group, group))
