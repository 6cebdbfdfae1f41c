/**
 * The script library, the vault and client groups in Chromium against a real svcd and three real agents (with
 * tags and labels): one logged-in page used by the tests in order.
 */
import { describe, expect, test } from 'vitest';
import { seriousAxeViolations } from '../../../../test-support/browser.js';
import { foreignRequests, useConsoleHarness } from '../../../../test-support/console-harness.js';

const h = useConsoleHarness({
  suite: 'library-vault-groups',
  agents: [
    { id: 'web-1', name: 'web one', tags: ['web'], extra: ['labels = { city = "Cologne" }'] },
    { id: 'web-2', name: 'web two', tags: ['web'], extra: ['labels = { city = "Berlin" }'] },
    { id: 'db-1', name: 'database', tags: ['db'], extra: ['labels = { city = "Berlin" }'] },
  ],
});

const nav = (label: string) =>
  h.page.getByRole('navigation', { name: 'Pages' }).getByRole('link', { name: label }).click();

const heading = (name: string) => h.page.getByRole('heading', { level: 1, name }).waitFor();

/** What the predicates use of the page's globals (the tests compile without the DOM library). */
interface PageGlobals {
  document: {
    activeElement: { closest(selector: string): unknown } | null;
    body: { innerText: string; innerHTML: string };
  };
}

interface LibraryScript {
  id: string;
  name: string;
  script: string;
  interpreter: string;
  tags: string[];
}

const libraryScripts = async (): Promise<LibraryScript[]> => {
  const res = await h.api.get('/library/scripts', { auth: h.adminAuth });
  return res.json.data as LibraryScript[];
};

describe('script library', () => {
  test('create a script in the highlighted editor, search it, edit it, run link, delete it', async () => {
    const { page } = h;
    await nav('Library');
    await heading('Script library');
    await page.getByText('The library is empty').waitFor();

    await page.getByRole('link', { name: 'New script' }).click();
    await heading('New script');
    await page.getByLabel('Name').fill('nightly cleanup');
    await page.getByRole('combobox', { name: 'Interpreter' }).fill('/bin/bash');
    await page.getByRole('combobox', { name: 'Tags' }).fill('ops');
    await page.keyboard.press('Enter');
    // The editor is CodeMirror, labelled by its field label; typing goes through its own input handling.
    const editor = page.getByRole('textbox', { name: 'Script' });
    await editor.click();
    await page.keyboard.type('for f in /tmp/*.old; do\nrm "$f"\ndone # tidy');
    await page.locator('.cm-content .tok-keyword', { hasText: 'for' }).first().waitFor();
    await page.locator('.cm-content .tok-comment', { hasText: '# tidy' }).waitFor();
    // Escape, then Tab, leaves the editor for the next control.
    await page.keyboard.press('Escape');
    await page.keyboard.press('Tab');
    expect(
      await page.evaluate(() =>
        Boolean((globalThis as unknown as PageGlobals).document.activeElement?.closest('.cm-editor')),
      ),
    ).toBe(false);
    expect(await seriousAxeViolations(page)).toEqual([]);

    await page.getByRole('button', { name: 'Save script' }).click();
    await heading('nightly cleanup');
    const [saved] = await libraryScripts();
    expect(saved).toMatchObject({
      name: 'nightly cleanup',
      interpreter: '/bin/bash',
      tags: ['ops'],
      script: 'for f in /tmp/*.old; do\nrm "$f"\ndone # tidy',
    });
    expect(page.url()).toBe(`${h.origin}/library/${saved?.id}`);
    expect(await page.getByRole('link', { name: 'Run', exact: true }).getAttribute('href')).toBe(
      `/runs/new?script_id=${saved?.id}`,
    );

    // A second script, then the list: search and tag.
    await h.api.post(
      '/library/scripts',
      { name: 'backup home', script: 'tar czf /tmp/home.tgz /home', tags: ['backup'] },
      { auth: h.adminAuth },
    );
    await page.getByRole('link', { name: '← Script library' }).click();
    await heading('Script library');
    await page.getByText('2 scripts').waitFor();
    await page.getByLabel('Search by name').fill('CLEAN');
    await page.getByText('1 script', { exact: true }).waitFor();
    expect(new URL(page.url()).searchParams.get('q')).toBe('CLEAN');
    await expect(page.getByRole('link', { name: 'nightly cleanup' }).isVisible()).resolves.toBe(true);
    await page.getByLabel('Search by name').fill('nothing-like-this');
    await page.getByText('No script matches').waitFor();
    await page.getByLabel('Search by name').fill('');
    await page.getByText('2 scripts').waitFor();
    await page.getByRole('button', { name: 'Show scripts tagged backup' }).click();
    await page.getByText('1 on this page tagged backup').waitFor();
    expect(await page.getByRole('link', { name: 'nightly cleanup' }).count()).toBe(0);
    await page.getByRole('button', { name: 'Stop filtering on tag backup' }).click();

    // Edit: a new name and one more line, typed at the end of the script.
    await page.getByRole('link', { name: 'nightly cleanup' }).click();
    await heading('nightly cleanup');
    await page.getByLabel('Name').fill('nightly cleanup v2');
    await page.getByRole('textbox', { name: 'Script' }).click();
    await page.keyboard.press('Control+End');
    await page.keyboard.type('\necho done');
    await page.getByRole('button', { name: 'Save changes' }).click();
    await page.getByText('The script is saved').waitFor();
    const edited = (await libraryScripts()).find((s) => s.id === saved?.id);
    expect(edited).toMatchObject({
      name: 'nightly cleanup v2',
      script: 'for f in /tmp/*.old; do\nrm "$f"\ndone # tidy\necho done',
    });

    // Delete asks first; Cancel keeps it, the confirmation removes it.
    await page.getByRole('button', { name: 'Delete', exact: true }).click();
    await page.getByRole('button', { name: 'Cancel' }).click();
    expect(await libraryScripts()).toHaveLength(2);
    await page.getByRole('button', { name: 'Delete', exact: true }).click();
    await page.getByRole('button', { name: 'Delete script' }).click();
    await heading('Script library');
    await page.getByText('1 script', { exact: true }).waitFor();
    expect((await libraryScripts()).map((s) => s.name)).toEqual(['backup home']);
  });
});

describe('vault', () => {
  test('set up, store an entry, show and hide its value, lock, refuse a wrong password, unlock', async () => {
    const { page } = h;
    await nav('Vault');
    await heading('Vault');
    await expect(page.getByTestId('vault-page-state').textContent()).resolves.toBe('not set up');
    await page.getByLabel('Vault password').fill('vault-pass-1');
    await page.getByLabel('Confirm the password').fill('vault-pass-2');
    await page.getByText('The two passwords differ').waitFor();
    expect(await page.getByRole('button', { name: 'Set up the vault' }).isDisabled()).toBe(true);
    await page.getByLabel('Confirm the password').fill('vault-pass-1');
    await page.getByRole('button', { name: 'Set up the vault' }).click();
    await page.getByTestId('vault-page-state').getByText('unlocked').waitFor();
    await page.getByText('The vault holds no entry yet').waitFor();

    await page.getByRole('link', { name: 'New entry' }).click();
    await heading('New vault entry');
    await page.getByLabel('Key').fill('db-password');
    await page.getByLabel('Client id').fill('web-1');
    await page.getByRole('textbox', { name: 'Value' }).fill('s3cret-Value!');
    await page.getByRole('button', { name: 'Store entry' }).click();
    await heading('db-password');
    await page.getByText('Hidden. Press Show to read it.').waitFor();
    const pageText = () =>
      page.evaluate(() => (globalThis as unknown as PageGlobals).document.body.innerHTML);
    expect(await pageText()).not.toContain('s3cret-Value!');

    await page.getByRole('button', { name: 'Show' }).click();
    await expect(page.getByTestId('vault-value').textContent()).resolves.toBe('s3cret-Value!');
    await page.getByRole('button', { name: 'Copy value' }).waitFor();
    await page.getByRole('button', { name: 'Hide' }).click();
    await page.getByText('Hidden. Press Show to read it.').waitFor();
    expect(await pageText()).not.toContain('s3cret-Value!');
    // Hidden means forgotten: showing it again asks svcd again (no cached copy was kept).
    const entryId = new URL(page.url()).pathname.split('/').pop() ?? '';
    const reads = () => h.requested.filter((url) => url.endsWith(`/api/v1/vault/${entryId}`)).length;
    const before = reads();
    await page.getByRole('button', { name: 'Show' }).click();
    await expect(page.getByTestId('vault-value').textContent()).resolves.toBe('s3cret-Value!');
    expect(reads()).toBe(before + 1);
    await page.getByRole('button', { name: 'Hide' }).click();
    expect(await pageText()).not.toContain('s3cret-Value!');

    await page.getByRole('link', { name: '← Vault' }).click();
    await heading('Vault');
    await page.getByLabel('Search by key or client id').fill('WEB-1');
    await page.getByText('1 entry', { exact: true }).waitFor();
    await page.getByLabel('Search by key or client id').fill('no-such-entry');
    await page.getByText('No entry matches').waitFor();

    await page.getByRole('button', { name: 'Lock the vault' }).click();
    await page.getByTestId('vault-page-state').getByText('locked').waitFor();
    await page.getByText('Entries are listed once the vault is unlocked.').waitFor();
    await page.getByLabel('Vault password').fill('wrong-password');
    await page.getByRole('button', { name: 'Unlock' }).click();
    await page.getByRole('alert').getByText('The vault stays locked', { exact: true }).waitFor();
    await page.getByLabel('Vault password').fill('vault-pass-1');
    await page.getByRole('button', { name: 'Unlock' }).click();
    await page.getByTestId('vault-page-state').getByText('unlocked').waitFor();
    await page.getByRole('link', { name: 'db-password' }).waitFor();
  });
});

describe('client groups', () => {
  test('a rule with a live preview as it changes, saved, then the group lists its members', async () => {
    const { page } = h;
    await nav('Client groups');
    await heading('Client groups');
    await page.getByText('No client group yet').waitFor();
    await page.getByRole('link', { name: 'New group' }).click();
    await heading('New client group');
    const count = page.getByTestId('preview-count');
    await page.getByText('Add or loosen a rule').waitFor();

    await page.getByLabel('Group id').fill('web-berlin');
    await page.getByLabel('Rule 1: patterns').fill('WEB');
    await count.getByText('2 clients match (2 connected)').waitFor();
    expect(await page.getByTestId('preview-clients').getByRole('link').allTextContents()).toEqual([
      'web one',
      'web two',
    ]);

    await page.getByRole('button', { name: 'Add a rule' }).click();
    await page.getByRole('combobox', { name: 'Rule 2: field' }).click();
    await page.getByRole('option', { name: 'Label (key:value)' }).click();
    await page.getByLabel('Rule 2: patterns').fill('city');
    await page.getByRole('alert').getByText('The rule is not valid').waitFor();
    await page.getByLabel('Rule 2: patterns').fill('city: berl*');
    await count.getByText('1 client matches (1 connected)').waitFor();
    expect(await page.getByTestId('preview-clients').getByRole('link').allTextContents()).toEqual([
      'web two',
    ]);

    // "all of": a client must carry every tag listed.
    await page.getByRole('combobox', { name: 'Rule 1: how' }).click();
    await page.getByRole('option', { name: 'matches all of (and)' }).click();
    await page.getByLabel('Rule 1: patterns').fill('web, db');
    await page.getByText('0 clients match (0 connected)').waitFor();
    await page.getByLabel('Rule 1: patterns').fill('w*');
    await count.getByText('1 client matches').waitFor();

    await page.getByRole('button', { name: 'Create group' }).click();
    await heading('Group web-berlin');
    await expect
      .poll(() => page.getByTestId('group-members').getByRole('link').allTextContents())
      .toEqual(['web two']);
    const stored = await h.api.get('/client-groups/web-berlin', { auth: h.adminAuth });
    expect(stored.json.data.params).toMatchObject({ tag: { and: ['w*'] }, labels: ['city: berl*'] });

    // Edit the saved rule: drop the tag rule, so every Berlin client is a member.
    await page.getByRole('button', { name: 'Remove rule 1' }).click();
    await count.getByText('2 clients match').waitFor();
    await page.getByRole('button', { name: 'Save changes' }).click();
    await page.getByText('The group now holds the clients its new rule matches.').waitFor();
    await page.getByRole('heading', { name: 'Members (2, 2 connected)' }).waitFor();

    await page.getByRole('link', { name: '← Client groups' }).click();
    await heading('Client groups');
    await page.getByRole('link', { name: 'web-berlin' }).waitFor();
    await page.getByText('labels city: berl*').waitFor();
  });

  test('asked only its own origin, and the CSP never had to block', () => {
    expect(foreignRequests(h)).toEqual([]);
    expect(h.cspErrors).toEqual([]);
  });
});
