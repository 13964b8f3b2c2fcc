package telegram

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"

	"github.com/agentbridge/agentbridge/core"
)

// maxSendWait bounds how long Send waits for the chat's budget (which a
// 429's retry_after extends) before returning the rate limit to the caller.
const maxSendWait = 10 * time.Second

// Send posts p to the conversation (into its forum topic, if any). In a
// group it quotes the message p answers (see quoteFor). In a private
// chat with drafts on, a post without buttons starts a draft. A new
// message waits up to maxSendWait for the chat's flood budget; a 429 is
// returned to the caller, who retries.
func (a *Adapter) Send(ctx context.Context, to core.ConversationKey, p core.Post) (core.MessageRef, error) {
	chat, err := parseChat(to.Channel)
	if err != nil {
		return core.MessageRef{}, err
	}
	if a.useDraft(chat, p) {
		if ref, ok, err := a.sendDraft(ctx, to, chat, p); ok {
			return ref, err
		}
	}
	return a.sendMessage(ctx, to, chat, p, quoteFor(chat, p))
}

// sendMessage sends a real message, as a reply to message quote if not 0.
func (a *Adapter) sendMessage(ctx context.Context, to core.ConversationKey, chat int64, p core.Post, quote int) (core.MessageRef, error) {
	params, err := a.textParams(p)
	if err != nil {
		return core.MessageRef{}, err
	}
	params["chat_id"] = to.Channel
	params.AddNonEmpty("message_thread_id", to.Thread)
	if quote != 0 {
		params["reply_parameters"] = replyParameters(quote)
	}
	// Wait for the chat's budget: that paces calls. A refusal Telegram
	// returns anyway (429) goes back to the caller, which retries (the
	// engine for notices and prompts, the presenter for replies).
	if err := a.await(ctx, chat, to.String(), p.Priority, maxSendWait); err != nil {
		return core.MessageRef{}, err
	}
	resp, err := a.call(ctx, "sendMessage", params)
	if err != nil {
		a.blocked(chat, err)
		return core.MessageRef{}, err
	}
	var m tgbotapi.Message
	if err := json.Unmarshal(resp.Result, &m); err != nil {
		return core.MessageRef{}, fmt.Errorf("telegram sendMessage: decode result: %w", err)
	}
	ref := core.MessageRef{Conv: to, ID: strconv.Itoa(m.MessageID)}
	if len(p.Buttons) > 0 {
		a.markKeyboard(to.Channel+"/"+ref.ID, true)
	}
	return ref, nil
}

// Edit replaces a message's text and keyboard (an edit without buttons
// removes the keyboard). Over the chat's budget it returns a
// *core.RateLimitError without calling Telegram, so the caller coalesces.
func (a *Adapter) Edit(ctx context.Context, ref core.MessageRef, p core.Post) error {
	if strings.HasPrefix(ref.ID, draftPrefix) {
		return a.editDraft(ctx, ref, p)
	}
	return a.editMessage(ctx, ref, p)
}

func (a *Adapter) editMessage(ctx context.Context, ref core.MessageRef, p core.Post) error {
	chat, err := parseChat(ref.Conv.Channel)
	if err != nil {
		return err
	}
	params, err := a.textParams(p)
	if err != nil {
		return err
	}
	params["chat_id"] = ref.Conv.Channel
	params["message_id"] = ref.ID
	key := ref.Conv.Channel + "/" + ref.ID
	a.mu.Lock()
	_, hasKeyboard := a.keyboards[key]
	a.mu.Unlock()
	if !hasKeyboard {
		if err := a.budget(chat).Claim(ctx, key, p.Priority, 0); err != nil {
			return err
		}
	} else if err := a.await(ctx, chat, key, core.PriorityFinal, maxSendWait); err != nil {
		// A prompt's last edit (its outcome, keyboard removed) is made once
		// by core and never retried: wait for the budget like a Send.
		return err
	}
	if _, err := a.call(ctx, "editMessageText", params); err != nil {
		a.blocked(chat, err)
		return err
	}
	a.markKeyboard(key, len(p.Buttons) > 0)
	return nil
}

// markKeyboard records whether message key shows buttons.
func (a *Adapter) markKeyboard(key string, on bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if on {
		a.keyboards[key] = struct{}{}
	} else {
		delete(a.keyboards, key)
	}
}

// await takes one message from chat's budget for caller (in its fair turn
// at priority p), waiting maxWait at most.
func (a *Adapter) await(ctx context.Context, chat int64, caller string, p core.Priority, maxWait time.Duration) error {
	if err := a.budget(chat).Claim(ctx, caller, p, maxWait); err != nil {
		return fmt.Errorf("telegram: %w", err)
	}
	return nil
}

// textParams holds what sendMessage and editMessageText share.
func (a *Adapter) textParams(p core.Post) (tgbotapi.Params, error) {
	params := tgbotapi.Params{"text": p.Text}
	if !p.Plain {
		params["parse_mode"] = tgbotapi.ModeHTML
	}
	if len(p.Buttons) > 0 {
		kb, err := keyboard(p.Buttons)
		if err != nil {
			return nil, err
		}
		params["reply_markup"] = kb
	}
	return params, nil
}

// keyboard lays buttons out two to a row.
func keyboard(buttons []core.Button) (string, error) {
	var rows [][]tgbotapi.InlineKeyboardButton
	for i, b := range buttons {
		if n := len(b.Value); n == 0 || n > 64 {
			return "", fmt.Errorf("telegram: button %q: callback data is %d bytes, want 1–64", b.Label, n)
		}
		if i%2 == 0 {
			rows = append(rows, nil)
		}
		rows[len(rows)-1] = append(rows[len(rows)-1], tgbotapi.NewInlineKeyboardButtonData(b.Label, b.Value))
	}
	kb, err := json.Marshal(tgbotapi.NewInlineKeyboardMarkup(rows...))
	if err != nil {
		return "", fmt.Errorf("telegram: encode keyboard: %w", err)
	}
	return string(kb), nil
}

// Typing shows "typing…" in the conversation for about five seconds.
func (a *Adapter) Typing(ctx context.Context, conv core.ConversationKey) error {
	params := tgbotapi.Params{"chat_id": conv.Channel, "action": tgbotapi.ChatTyping}
	params.AddNonEmpty("message_thread_id", conv.Thread)
	_, err := a.call(ctx, "sendChatAction", params)
	return err
}

// Download fetches an attachment (Source is its file_id) through getFile,
// refusing more than max bytes (and the Bot API's 20 MB cap). The
// token-bearing file URL stays inside the adapter.
func (a *Adapter) Download(ctx context.Context, att core.Attachment, w io.Writer, max int64) error {
	if max <= 0 || max > maxDownload {
		max = maxDownload
	}
	resp, err := a.call(ctx, "getFile", tgbotapi.Params{"file_id": att.Source})
	if err != nil {
		return err
	}
	var f tgbotapi.File
	if err := json.Unmarshal(resp.Result, &f); err != nil {
		return fmt.Errorf("telegram getFile: decode result: %w", err)
	}
	if int64(f.FileSize) > max {
		return fmt.Errorf("telegram download: file is %d bytes, over the %d byte limit", f.FileSize, max)
	}
	if f.FilePath == "" {
		return errors.New("telegram download: getFile returned no file_path")
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.opts.APIURL+"/file/bot"+a.token+"/"+f.FilePath, nil)
	if err != nil {
		return fmt.Errorf("telegram download: %s", a.scrub(err.Error()))
	}
	res, err := a.hc.Do(req)
	if err != nil {
		return a.translate("download", err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("telegram download: HTTP %d", res.StatusCode)
	}
	n, err := io.Copy(w, io.LimitReader(res.Body, max+1))
	if err != nil {
		return fmt.Errorf("telegram download: %s", a.scrub(err.Error()))
	}
	if n > max {
		return fmt.Errorf("telegram download: file is over the %d byte limit", max)
	}
	return nil
}
