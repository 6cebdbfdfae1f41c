import { describe, expect, test } from 'vitest';
import { languageOfInterpreter, libraryListQuery, parseLibrarySearch } from '../src/api/library-queries.js';

describe('script library search ↔ URL and API query', () => {
  test('only known values of the URL are kept', () => {
    expect(parseLibrarySearch({ q: 'backup', sort: '-updated_at', tag: 'ops', page: '3' })).toEqual({
      q: 'backup',
      sort: '-updated_at',
      tag: 'ops',
      page: 3,
    });
    expect(parseLibrarySearch({ q: '', sort: 'created_by', page: '0', tag: 5 })).toEqual({});
    expect(parseLibrarySearch({ page: '1.5' })).toEqual({});
  });

  test('the API query searches the name with wildcards, sorts and pages', () => {
    expect(libraryListQuery({ q: 'back', sort: '-updated_at', page: 2 }).toString()).toBe(
      'sort=-updated_at&page%5Blimit%5D=50&page%5Boffset%5D=50&filter%5Bname%5D=*back*',
    );
    expect(libraryListQuery({}).toString()).toBe('sort=name&page%5Blimit%5D=50&page%5Boffset%5D=0');
  });

  test('the editor highlights by interpreter', () => {
    expect(languageOfInterpreter('')).toBe('shell');
    expect(languageOfInterpreter('/bin/bash')).toBe('shell');
    expect(languageOfInterpreter('PowerShell')).toBe('powershell');
    expect(languageOfInterpreter('pwsh')).toBe('powershell');
    expect(languageOfInterpreter('/usr/bin/python3')).toBe('python');
    expect(languageOfInterpreter('cmd.exe')).toBe('plain');
  });
});
