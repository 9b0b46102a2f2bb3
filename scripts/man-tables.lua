-- man-tables.lua - a pandoc filter for the man pages (scripts/mkman.sh).
-- A terminal has no room for the docs' wide tables (tbl warns, cells
-- overflow), so each row becomes an item of a definition list: its first
-- cell the term, every other cell a paragraph, led by its column's
-- heading when the table has more than two columns.
local stringify = pandoc.utils.stringify

function Table(t)
  local heads = {}
  if #t.head.rows > 0 then
    for i, cell in ipairs(t.head.rows[1].cells) do
      heads[i] = stringify(cell.contents)
    end
  end
  local items = {}
  for _, body in ipairs(t.bodies) do
    for _, row in ipairs(body.body) do
      local cells = row.cells
      local term = pandoc.utils.blocks_to_inlines(cells[1].contents)
      local def = {}
      for i = 2, #cells do
        local inl = pandoc.utils.blocks_to_inlines(cells[i].contents)
        if #inl > 0 then
          if #cells > 2 and heads[i] and heads[i] ~= "" then
            inl:insert(1, pandoc.Space())
            inl:insert(1, pandoc.Emph({pandoc.Str(heads[i] .. ":")}))
          end
          def[#def + 1] = pandoc.Plain(inl)
        end
      end
      if #def == 0 then
        def = {pandoc.Plain({})}
      end
      items[#items + 1] = {term, {def}}
    end
  end
  return pandoc.DefinitionList(items)
end
