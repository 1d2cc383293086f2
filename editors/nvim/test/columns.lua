-- Headless test of what the cockpit shows at 80 columns against the real `cairn serve`.
--
--   nvim --headless --clean -u NONE -c "luafile editors/nvim/test/columns.lua"
--
-- Environment (set by tests/editors/test_nvim_memories.py):
--   CAIRN_TEST_PYTHON    interpreter that runs `-m cairn.server serve`
--   CAIRN_TEST_WS        a workspace whose topic files have long names alike at their start (two share
--                        their first 40 characters, two differ only in their middle), one named with
--                        accented letters (the server refuses it: its row shows the error), and two
--                        pending proposals whose targets share their first 32 characters
--
-- Memories: names too long for their column are cut in the middle and stay distinct, every line is
-- valid text (no character cut in two), every column starts at the same place on every line (the
-- refused topic's error where the others' descriptions start), and the description gets 25 columns
-- or more.  Pending: the targets stay distinct.  The keys lines fit in 80 columns and show every key
-- of the view (? and q included).  Success prints "cairn columns: OK"; a failure
-- "cairn columns: FAIL: ..." on stderr and exit status 1.
local here = debug.getinfo(1, "S").source:sub(2)
package.path = vim.fn.fnamemodify(here, ":p:h:h") .. "/?.lua;" .. package.path

local TIMEOUT = 90000

local harness = dofile(vim.fn.fnamemodify(here, ":p:h") .. "/harness.lua")
local check = harness.check

local function wait_for(what, pred)
  harness.wait_for(what, pred, TIMEOUT, true)
end

local width = vim.fn.strdisplaywidth

-- The rows of cockpit `buf` as shown: { { line = TEXT, row = ROW }, ... }, top to bottom.
local function shown_rows(cockpit, buf)
  local out = {}
  for i, line in ipairs(vim.api.nvim_buf_get_lines(buf, 0, -1, false)) do
    vim.api.nvim_win_set_cursor(0, { i, 0 })
    local row = cockpit.row_at_cursor(buf)
    if row then
      table.insert(out, { line = line, row = row })
    end
  end
  return out
end

-- The display column where `text` starts in `line` (0-based), or nil.
local function column_of(line, text)
  local at = line:find(text, 1, true)
  return at and width(line:sub(1, at - 1))
end

-- The header's keys lines of cockpit `buf`: from the third line to the blank line before the rows.
local function keys_lines(buf)
  local out = {}
  for i, line in ipairs(vim.api.nvim_buf_get_lines(buf, 2, -1, false)) do
    if line == "" then
      break
    end
    out[i] = line
  end
  return out
end

local function check_keys(cockpit, buf, view)
  local lines = keys_lines(buf)
  local text = table.concat(lines, "  ")
  for _, line in ipairs(lines) do
    check(width(line) <= 80, "%s: a keys line is wider than 80 columns: %s", view, line)
  end
  for _, key in ipairs(cockpit.view_keys(view)) do
    check(text:find(key, 1, true), "%s: the keys lines lack %q: %s", view, key, text)
  end
end

local function main()
  vim.o.columns = 80
  local cairn = require("cairn")
  local ws = os.getenv("CAIRN_TEST_WS")
  cairn.setup({
    cmd = { os.getenv("CAIRN_TEST_PYTHON"), "-m", "cairn.server", "serve" },
    settings = { mode = "propose", provider = "extractive" },
  })
  local cockpit = require("cairn.cockpit")
  local buf
  cockpit.open(ws, "memories", function(b) buf = b end)
  wait_for("the Memories view", function() return buf ~= nil and #shown_rows(cockpit, buf) == 6 end)
  check(vim.api.nvim_win_get_width(0) == 80, "the window is %d columns wide", vim.api.nvim_win_get_width(0))
  check_keys(cockpit, buf, "memories")

  local rows = shown_rows(cockpit, buf)
  -- for the messages: a byte of a character cut in two shows as <c3>
  local shown = vim.fn.strtrans(table.concat(vim.tbl_map(function(x) return x.line end, rows), "\n"))
  local type_at, about_at, error_line = nil, nil, nil
  for _, r in ipairs(rows) do
    -- no character cut in two (a cut byte shows as <c3>)
    check(vim.fn.strtrans(r.line) == r.line, "a line is not valid text: %s", vim.fn.strtrans(r.line))
    if type(r.row.error) == "string" then
      error_line = r.line
    else
      local t, a = column_of(r.line, " project "), column_of(r.line, "about ")
      check(t and a, "no type or description on the line of %s: %s", r.row.file, r.line)
      type_at, about_at = type_at or t, about_at or a
      check(t == type_at and a == about_at, "the columns are not aligned:\n%s", shown)
    end
  end
  check(error_line ~= nil, "the refused topic is not listed")
  check(column_of(error_line, "E_") == about_at, "the error does not start where the descriptions do:\n%s", shown)
  check(about_at <= 55, "the description gets %d columns at 80:\n%s", 80 - about_at, shown)
  local names = {}
  for _, r in ipairs(rows) do
    local file = vim.fn.fnamemodify(r.row.file, ":t")
    local name = vim.trim(vim.fn.matchstr(r.line, "^.\\{-}\\ze \\{1,}\\(project\\|E_\\)"))
    check(width(name) <= type_at, "the name of %s is wider than its column: %s", file, vim.fn.strtrans(name))
    check(names[name] == nil, "%s and %s both show as %q:\n%s", names[name] or "", file, vim.fn.strtrans(name), shown)
    names[name] = file
  end
  -- short names are shown whole
  check(names["tests.md"] == "tests.md", "tests.md is not shown whole: %s", vim.inspect(names))

  -- Pending: the two targets alike at their start stay distinct
  local done = false
  cockpit.set_view(buf, "pending", function() done = true end)
  wait_for("the Pending view", function() return done end)
  check_keys(cockpit, buf, "pending")
  local targets = {}
  for _, r in ipairs(shown_rows(cockpit, buf)) do
    check(vim.fn.strtrans(r.line) == r.line, "a line is not valid text: %s", vim.fn.strtrans(r.line))
    local cell = vim.trim(vim.fn.strcharpart(r.line, column_of(r.line, r.row.kind) + 12, 24))
    targets[r.row.target] = cell
  end
  local seen = {}
  for target, cell in pairs(targets) do
    check(seen[cell] == nil, "%s and %s both show as %q", seen[cell] or "", target, cell)
    seen[cell] = target
  end
  for _, target in ipairs({ "build-the-docker-images-for-the-web-app-with-make-images.md",
                            "build-the-docker-images-for-the-worker-with-make-images.md" }) do
    check(targets[".agents/memory/" .. target], "%s is not pending: %s", target, vim.inspect(targets))
  end
end

harness.run("columns", main)
