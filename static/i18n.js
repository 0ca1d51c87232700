// Every string the UI shows, in English and 中文. t(key, ...args) picks the current
// language ({0}, {1} are replaced by args); applyI18n() fills the elements that carry
// data-i18n (text), data-i18n-ph (placeholder) and data-i18n-title (title + aria-label),
// so switching language re-translates the page without re-rendering it.
'use strict';
const I18N = {
  en: {
    newChat: 'New chat', nav_chat: 'Chat', nav_memory: 'Memory', nav_skills: 'Skills',
    nav_tools: 'Tools', nav_search: 'Search', filterSessions: 'Filter chats', profile: 'Profile',
    theme: 'Switch light/dark theme', menu: 'Menu', export: 'Export', exportMd: 'Markdown',
    exportHtml: 'HTML', exportJson: 'JSON', print: 'Print / PDF',
    pendingWaiting: 'Tool calls are waiting for your answer.', review: 'Review',
    grantsTitle: 'Always allowed in this chat:', revoke: 'Revoke',
    revokeTitle: 'Revoke: ask again before {0}', revoked: 'Revoked: {0} is asked again',
    welcome: 'What can I do for you?',
    welcomeHint: 'Evolve remembers, uses skills and tools, and asks before anything risky.',
    inputPh: 'Message Evolve (Enter sends, Shift+Enter adds a line)', send: 'Send', stop: 'Stop',
    memSearch: 'Search memories', addMemory: 'Add memory', memContent: 'What should Evolve remember?',
    priority: 'Priority', importance: 'Importance', category: 'Category', tags: 'Tags',
    tagsHint: 'comma, separated', pinned: 'Pinned', save: 'Save', cancel: 'Cancel', ok: 'OK',
    mcpServers: 'MCP servers', allTools: 'All tools', searchPh: 'Search chats, messages and memories',
    search: 'Search', permTitle: 'Allow {0}?', permTitle2: 'Really run {0}?',
    permWarn: 'Check the exact arguments below. This is the call that will run.',
    allow: 'Allow', runIt: 'Run it', always: 'Always for this session', alwaysCommand: 'Always this exact command, this session', deny: 'Deny',
    stepOf: 'step {0} of {1}', waiting: 'Waiting for the agent…', copy: 'Copy', copied: 'Copied',
    copyFail: 'Cannot copy: select the text and copy it by hand', untitled: 'Untitled chat',
    noSessions: 'No chats yet', noMatch: 'Nothing matches', rename: 'Rename', delete: 'Delete',
    renamePrompt: 'New title of this chat:', deleteSession: 'Delete the chat “{0}” and its messages?',
    deleteMemory: 'Delete this memory?', deleted: 'Deleted', saved: 'Saved', loading: 'Loading…',
    stopped: 'Stopped.', busy: 'Wait for the answer or press Stop first.',
    errNetwork: 'Cannot reach the Evolve server: {0}', errAuth: 'Sign in again',
    errTurn: 'The turn failed', cutOff: 'The connection ended before the answer was complete.', you: 'You', assistant: 'Evolve', tool: 'Tool output: {0}',
    system: 'System', toolCall: 'Calls {0}', running: 'running…', ran: 'ran', refused: 'not run',
    failed: 'error', turnN: 'Turn {0}', memories: 'Memories', skills: 'Skills', tools: 'Tools',
    evaluation: 'Evaluation', reflection: 'Reflection', tokens: 'Tokens', timing: 'Time',
    notYet: 'not yet (evaluated after the reply; reopen to refresh)', none: 'none',
    memOf: '{0} of {1} considered', tokMain: 'main {0} in / {1} out', tokCheap: 'cheap {0} in / {1} out',
    timeVal: 'answer {0} ms · agent {1} ms · {2} steps', needsPerson: 'needed a person',
    prio0: '0 critical', prio1: '1 high', prio2: '2 normal', prio3: '3 low', pin: 'Pin',
    unpin: 'Unpin', noMemories: 'No memories', noSkills: 'No skills', connected: 'connected',
    disconnected: 'not connected', level: 'Level', name: 'Name', source: 'Source',
    description: 'Description', disabled: 'disabled', auto: 'auto',
    levelSet: '{0} is now {1}', noServers: 'No MCP servers configured (evolve mcp add).',
    sessions: 'Chats', messages: 'Messages', noResults: 'No results', profileSet: 'Profile: {0}',
    close: 'Close', default: 'default', results: 'Results for “{0}”',
    merged: 'Merged into the similar memory #{0}', duplicate: 'Already remembered as #{0}',
    nav_tasks: 'Tasks', nav_prompt: 'Prompt', taskQuestion: 'What should Evolve do, on its own, on schedule?',
    taskWhen: 'When', taskValue: 'Value', taskAllow: 'Tools allowed up to', kindEvery: 'every',
    kindDaily: 'daily at', kindCron: 'cron (m h dom mon dow)', kindAt: 'once at', addTask: 'Add task',
    taskAdded: 'Task #{0} added', noTasks: 'No scheduled tasks yet',
    nextRun: 'next {0}', lastRun: 'last {0}', neverRun: 'not run yet', runNow: 'Run now',
    runStarted: 'Task #{0} started', taskLog: 'Runs', openChat: 'Open its chat', noRuns: 'No runs yet',
    deleteTask: 'Delete task #{0}? Its chat stays.', timeZone: 'Time zone: {0}', taskRunning: 'running',
    promptHint: 'The system prompt every turn starts with. A new version is used from the next turn; any version can be made active again.',
    promptEvolve: 'Evolve from what was learned', promptSave: 'Save as a new version', version: 'Version',
    created: 'Created', chars: '{0} characters', active: 'active', activate: 'Make active',
    view: 'View', promptActive: 'Version {0} is active; the next turn uses it', promptKept: 'The model kept the prompt as it is',
    builtIn: 'built in', promptOf: 'Version {0}', learnedSkill: 'Learned skill', lessonSaved: 'Lesson',
    deleteSkill: 'Remove the skill {0}?',
    styleNotes: 'Style notes', styleHint: 'Learned from answers that were rated highly; every prompt carries them.',
    noStyleNotes: 'No style notes yet', clearAll: 'Clear all', deleteStyle: 'Forget this style note?',
    clearStyle: 'Forget all {0} style notes?', styleChanged: 'The style notes changed meanwhile; here they are again',
  },
  zh: {
    newChat: '新对话', nav_chat: '对话', nav_memory: '记忆', nav_skills: '技能', nav_tools: '工具',
    nav_search: '搜索', filterSessions: '筛选对话', profile: '配置', theme: '切换浅色/深色',
    menu: '菜单', export: '导出', exportMd: 'Markdown', exportHtml: 'HTML', exportJson: 'JSON',
    print: '打印 / PDF', pendingWaiting: '有工具调用等待你的答复。', review: '查看',
    grantsTitle: '本对话内总是允许：', revoke: '撤销', revokeTitle: '撤销：{0} 之前再次询问',
    revoked: '已撤销：{0} 会再次询问',
    welcome: '我能帮你做什么？', welcomeHint: 'Evolve 会记忆、使用技能和工具，有风险的操作会先问你。',
    inputPh: '给 Evolve 发消息（Enter 发送，Shift+Enter 换行）', send: '发送', stop: '停止',
    memSearch: '搜索记忆', addMemory: '添加记忆', memContent: '要 Evolve 记住什么？',
    priority: '优先级', importance: '重要性', category: '类别', tags: '标签', tagsHint: '用逗号分隔',
    pinned: '置顶', save: '保存', cancel: '取消', ok: '确定', mcpServers: 'MCP 服务器',
    allTools: '全部工具', searchPh: '搜索对话、消息和记忆', search: '搜索',
    permTitle: '允许 {0}？', permTitle2: '确定运行 {0}？',
    permWarn: '请核对下面的完整参数，将按此运行。', allow: '允许', runIt: '运行',
    always: '本对话内总是允许', alwaysCommand: '本对话内总是允许这条命令', deny: '拒绝', stepOf: '第 {0} 步，共 {1} 步', waiting: '等待智能体…',
    copy: '复制', copied: '已复制', copyFail: '无法复制：请手动选择文本复制', untitled: '未命名对话',
    noSessions: '还没有对话', noMatch: '没有匹配项', rename: '重命名', delete: '删除',
    renamePrompt: '对话的新标题：', deleteSession: '删除对话“{0}”及其全部消息？',
    deleteMemory: '删除这条记忆？', deleted: '已删除', saved: '已保存', loading: '加载中…',
    stopped: '已停止。', busy: '请等待回答完成或先按停止。', errNetwork: '无法连接 Evolve 服务器：{0}',
    errAuth: '请重新登录', errTurn: '本轮失败', cutOff: '连接在回答完成前中断。', you: '你', assistant: 'Evolve', tool: '工具输出：{0}',
    system: '系统', toolCall: '调用 {0}', running: '运行中…', ran: '已运行', refused: '未运行',
    failed: '出错', turnN: '第 {0} 轮', memories: '记忆', skills: '技能', tools: '工具',
    evaluation: '评估', reflection: '反思', tokens: '令牌', timing: '耗时',
    notYet: '暂无（回答后评估；重新展开可刷新）', none: '无', memOf: '从 {1} 条中选 {0} 条',
    tokMain: '主模型 输入 {0} / 输出 {1}', tokCheap: '辅助模型 输入 {0} / 输出 {1}',
    timeVal: '回答 {0} 毫秒 · 智能体 {1} 毫秒 · {2} 步', needsPerson: '需要人工确认',
    prio0: '0 关键', prio1: '1 高', prio2: '2 普通', prio3: '3 低', pin: '置顶', unpin: '取消置顶',
    noMemories: '没有记忆', noSkills: '没有技能', connected: '已连接', disconnected: '未连接',
    level: '级别', name: '名称', source: '来源', description: '说明',
    disabled: '停用', auto: '自动', levelSet: '{0} 现为 {1}',
    noServers: '未配置 MCP 服务器（evolve mcp add）。', sessions: '对话', messages: '消息',
    noResults: '没有结果', profileSet: '配置：{0}', close: '关闭', default: '默认',
    results: '“{0}”的结果', merged: '已合并到相似的记忆 #{0}', duplicate: '已记住（#{0}）',
    nav_tasks: '定时任务', nav_prompt: '提示词', taskQuestion: '要 Evolve 按计划自动做什么？',
    taskWhen: '时间', taskValue: '值', taskAllow: '允许的工具级别上限', kindEvery: '每隔',
    kindDaily: '每天', kindCron: 'cron（分 时 日 月 周）', kindAt: '一次，于', addTask: '添加任务',
    taskAdded: '已添加任务 #{0}', noTasks: '还没有定时任务',
    nextRun: '下次 {0}', lastRun: '上次 {0}', neverRun: '尚未运行', runNow: '立即运行',
    runStarted: '任务 #{0} 已开始', taskLog: '运行记录', openChat: '打开其对话', noRuns: '还没有运行记录',
    deleteTask: '删除任务 #{0}？其对话会保留。', timeZone: '时区：{0}', taskRunning: '运行中',
    promptHint: '每轮对话开头的系统提示词。新版本从下一轮起生效；任何版本都可以重新启用。',
    promptEvolve: '根据学到的内容进化', promptSave: '保存为新版本', version: '版本',
    created: '创建时间', chars: '{0} 个字符', active: '当前', activate: '启用',
    view: '查看', promptActive: '版本 {0} 已启用，下一轮起生效', promptKept: '模型保留了原提示词',
    builtIn: '内置', promptOf: '版本 {0}', learnedSkill: '学到的技能', lessonSaved: '教训',
    deleteSkill: '删除技能 {0}？',
    styleNotes: '风格笔记', styleHint: '从评分高的回答中学到，每次提示词都会带上。',
    noStyleNotes: '还没有风格笔记', clearAll: '全部清除', deleteStyle: '忘掉这条风格笔记？',
    clearStyle: '忘掉全部 {0} 条风格笔记？', styleChanged: '风格笔记刚有变化，已重新列出',
  },
};

const store = {
  get: k => { try { return localStorage.getItem(k); } catch { return null; } },
  set: (k, v) => { try { localStorage.setItem(k, v); } catch { /* private mode: not kept */ } },
};
let LANG = store.get('evolve.lang') || (/^zh/i.test(navigator.language || '') ? 'zh' : 'en');

function t(key, ...args) {
  const s = I18N[LANG][key] ?? I18N.en[key] ?? key;
  return s.replace(/\{(\d)\}/g, (_, i) => String(args[i] ?? ''));
}

function applyI18n(root = document) {
  document.documentElement.lang = LANG === 'zh' ? 'zh-CN' : 'en';
  for (const el of root.querySelectorAll('[data-i18n]')) el.textContent = t(el.dataset.i18n);
  for (const el of root.querySelectorAll('[data-i18n-ph]')) el.placeholder = t(el.dataset.i18nPh);
  for (const el of root.querySelectorAll('[data-i18n-title]')) {
    el.title = t(el.dataset.i18nTitle);
    el.setAttribute('aria-label', el.title);
  }
}
